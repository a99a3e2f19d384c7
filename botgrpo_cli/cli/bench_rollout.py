"""`botgrpo bench rollout`: seconds per generate call, lean decode loop vs HF generate, fp32 and bf16."""

from __future__ import annotations

import os
from typing import Annotated, Optional

import typer
from rich.table import Table

from botgrpo_cli.console import console, out
from botgrpo_cli.errors import UserError


def register(app: typer.Typer) -> None:
    @app.command("rollout")
    def bench_rollout(
        task: Annotated[str, typer.Option(help="Task whose prompts (and tiny model) are used.")] = "arith_synth",
        model: Annotated[Optional[str], typer.Option(help="Model dir or hub id instead of the tiny model.")] = None,
        prompts: Annotated[int, typer.Option(min=1, help="Prompts per batch.")] = 8,
        group: Annotated[int, typer.Option(min=1, help="Completions per prompt.")] = 8,
        new_tokens: Annotated[int, typer.Option(min=1, help="Generation length limit.")] = 48,
        threads: Annotated[int, typer.Option(min=1, help="torch CPU threads.")] = 2,
        repeats: Annotated[int, typer.Option(min=1, help="Timed calls per engine and precision.")] = 3,
        vllm: Annotated[bool, typer.Option("--vllm/--no-vllm", help="Also time vLLM (rollout.engine=vllm) and its "
                                           "weight sync; needs a model with head_dim >= 32 (--model).")] = False,
        bf16: Annotated[str, typer.Option(help="bf16 autocast beside fp32: auto (on a CPU with native bf16), on "
                                               "(also where it is emulated: slow, for comparison), off.")] = "auto",
    ) -> None:
        """The same batch through HF generate and the lean decode loop: medians, tokens/s, speed-up."""
        from botgrpo_cli.bench.rollout import TARGET, run

        console.print(f"[bold]bench rollout:[/] {prompts} prompts x {group} x {new_tokens} new tokens on "
                      f"{model or task + ' tiny model'}, {repeats} timed calls each")
        if bf16 not in ("auto", "on", "off"):
            raise UserError(f"bench rollout: --bf16 {bf16!r}: choose auto, on or off")
        report = run(task, model, prompts, group, new_tokens, threads, repeats, vllm, bf16)
        base = {r.precision: r for r in report.rows if r.engine == "hf generate"}
        table = Table(title=f"seconds per generate call: {prompts} x {group} x {new_tokens}, temperature 1, "
                            f"{threads} threads, load average {os.getloadavg()[0]:.1f} (medians of {repeats})")
        for col in ("engine", "precision", "s / call", "tokens", "tokens / s", "x hf (same precision)"):
            table.add_column(col, justify="left" if col in ("engine", "precision") else "right")
        for r in report.rows:
            table.add_row(r.engine, r.precision, f"{r.seconds:.3f}", str(r.tokens), f"{r.tokens_per_s:.0f}",
                          f"{base[r.precision].seconds / r.seconds:.2f}")
        out.print(table)
        fast = [base[r.precision].seconds / r.seconds for r in report.rows if r.engine == "botgrpo fast"]
        verdict = "met" if min(fast) >= TARGET else "NOT met"
        out.print(f"speed-up of the lean loop over HF generate: {' / '.join(f'{x:.2f}' for x in fast)} "
                  f"(target >= {TARGET}: {verdict}); greedy rows equal: {'yes' if report.greedy_equal else 'NO'}")
        for precision, seconds in (report.sync_seconds or {}).items():
            out.print(f"vLLM weight sync ({precision}): {seconds:.3f} s per training step (median)")
        if report.bf16_logp_diff is not None:
            out.print(f"bf16 autocast vs fp32: mean |log-prob difference| {report.bf16_logp_diff:.4f} nats per "
                      "sampled token")
