"""`botgrpo bench step`: seconds per training step, its split, and peak memory, grpo vs bot_grpo."""

from __future__ import annotations

from typing import Annotated, Optional

import typer
from rich.table import Table

from botgrpo_cli.cli.options import Threads, comma_list, positive_int
from botgrpo_cli.console import console, out
from botgrpo_cli.errors import UserError


def register(app: typer.Typer) -> None:
    @app.command("step")
    def bench_step(
        algos: Annotated[str, typer.Option(help="Comma-separated presets; ratios are against the first.")] = "grpo,bot_grpo",
        steps: Annotated[int, typer.Option(help="Timed steps per preset (plus one warm-up).")] = 5,
        task: Annotated[str, typer.Option(help="Task whose bootstrapped tiny model is used.")] = "react_synth",
        threads: Threads = 2,
        repeats: Annotated[int, typer.Option(help="Runs per preset, alternating presets.")] = 2,
        model: Annotated[Optional[str], typer.Option(help="Model dir, .gguf file or hub id instead of the tiny model.")] = None,
        num_processes: Annotated[int, typer.Option("--num-processes", help="Compare one process with this many "
                                                   "(same global batch, same total threads), first preset only.")] = 1,
        mini_batches: Annotated[Optional[str], typer.Option("--mini-batches", help="Comma-separated "
                                "algo.mini_batches values: each preset runs at each (default: the preset's own).")] = None,
        vs: Annotated[Optional[str], typer.Option("--vs", help="Peer trainer to time side by side on identical "
                                                  "settings (outcome rewards, beta 0): trl.")] = None,
        shape: Annotated[str, typer.Option(help="--vs: prompts x completions x new tokens.")] = "8x8x48",
        precision: Annotated[str, typer.Option(help="--vs: fp32 | bf16 | auto (botgrpo's start-up rule), the same "
                                                    "for both trainers.")] = "auto",
        asynchronous: Annotated[Optional[str], typer.Option("--async", help="Comma-separated rollout.max_staleness "
                                "values, e.g. 0,1,2: the first preset at each, side by side (asynchronous rollouts; "
                                "tokens/s and the mean staleness reached are shown).")] = None,
        held_out: Annotated[int, typer.Option("--held-out", help="With --async: held-out prompts each run evaluates "
                            "after its last step (eval/success, same seed for every bound): does staleness cost "
                            "learning? 0 = none.")] = 0,
        sets: Annotated[Optional[list[str]], typer.Option("--set", help="Config override for every preset's run, e.g. "
                        "optim.lr=1e-30 (the weights then do not move, so the presets sample the same completions every "
                        "step and only their own cost differs). Repeatable; not with --vs or --num-processes.")] = None,
    ) -> None:
        """Median step time (generate / reward / update) and peak RSS at 8 prompts x 8 completions x 48 tokens
        (or the shape --set gives)."""
        from botgrpo_cli.bench.step import run, shape_of

        names = comma_list(algos, "--algos", example="grpo,bot_grpo")
        if sets and (vs is not None or num_processes > 1):
            raise UserError("--set applies to the preset comparison only; drop it, or --vs / --num-processes")
        if vs is not None:
            if vs != "trl":
                raise UserError(f"--vs {vs!r} is not supported; the peer benchmark knows: trl")
            from botgrpo_cli.bench.peer_trl import Shape
            from botgrpo_cli.bench.peer_trl import run as run_peer

            if precision not in ("fp32", "bf16", "auto"):
                raise UserError(f"--precision {precision!r}: choose fp32, bf16 or auto")
            run_peer(out, steps=steps, task=task, threads=threads, rounds=repeats, model=model,
                     shape=Shape.parse(shape), precision=precision)
            return
        if num_processes > 1:
            _scaling(num_processes, names[0], steps, task, threads, model, repeats)
            return
        console.print(f"[bold]bench step:[/] {', '.join(names)} on {task}, {steps} timed steps each"
                      + (f", with {' '.join(sets)}" if sets else ""))
        counts = comma_list(mini_batches, "--mini-batches", positive_int, example="1,2,4") if mini_batches else None
        bounds = comma_list(asynchronous, "--async", _non_negative, example="0,1,2") if asynchronous else None
        if bounds is not None:
            names = names[:1]
            if any(x.startswith("rollout.max_staleness=") for x in sets or ()):
                raise UserError("--async sets rollout.max_staleness for each run; drop it from --set")
            if held_out:  # evaluated once, after the last (warm-up + timed) step
                sets = [*(sets or []), f"run.eval_every={steps + 1}", f"run.eval_prompts={held_out}"]
        elif held_out:
            raise UserError("--held-out goes with --async (the held-out metric per staleness bound)")
        shape = shape_of(names[0], sets or ())  # before the runs: a bad --set is refused at once
        results = run(names, steps, task, threads, model, repeats, counts, sets or (), bounds)
        base = results[0]
        table = Table(title=f"training step on {task}: {shape}, medians of {steps} steps x {repeats} runs"
                            + (f"; {', '.join(sets)}" if sets else ""))
        for col in ("preset", "step s", "gen s", "logp s", "reward s", "update s", "reward %", "RSS MB",
                    "x step", "x RSS", "updates", "clip", "tok/s", "stale", "held-out"):
            table.add_column(col, justify="left" if col == "preset" else "right")
        for r in results:
            table.add_row(r.algo, f"{r.step_s:.3f}", f"{r.generate_s:.3f}", f"{r.logp_s:.3f}", f"{r.reward_s:.3f}",
                          f"{r.update_s:.3f}", f"{r.reward_share:.1%}", f"{r.peak_rss_mb:.0f}",
                          f"{r.step_s / base.step_s:.3f}", f"{r.peak_rss_mb / base.peak_rss_mb:.3f}",
                          f"{r.updates:.0f}", f"{r.clip_frac:.4f}", f"{r.tokens_s:.0f}", f"{r.staleness:.2f}",
                          "" if r.held_out != r.held_out else f"{r.held_out:.3f}")  # NaN: not evaluated
        out.print(table, width=max(out.width, 160))  # all the columns, even when piped
        out.print(f"x step, x RSS: ratio to {base.algo}; reward s: time blocked on scoring after the overlapped "
                  "log-prob pass; updates: optimizer steps per rollout batch; clip: their mean clip fraction; "
                  "tok/s: completion tokens trained per second of step; stale: mean async/staleness "
                  "(s=K: rollout.max_staleness=K, gen s then the wait for the producer's batch); held-out: "
                  "eval/success after the last step (--held-out). "
                  "Targets: ratios within 1.05, reward % under 15.")


def _scaling(n: int, algo: str, steps: int, task: str, threads: int, model: Optional[str], repeats: int) -> None:
    from botgrpo_cli.bench.step import run_scaling, shape_of

    console.print(f"[bold]bench step:[/] {algo} on {task}, 1 process vs {n}, {steps} timed steps x {repeats} runs each")
    figures = run_scaling(n, algo, steps, task, threads, model, repeats)
    one = figures[0]
    table = Table(title=f"training step on {task}, global batch {shape_of(algo)}: medians of {steps} steps x "
                        f"{repeats} runs")
    for col in ("procs", "threads", "step s", "gen s", "logp s", "reward s", "update s", "x step"):
        table.add_column(col, justify="right", no_wrap=True)
    for f in figures:
        table.add_row(str(f.processes), str(f.threads), f"{f.step_s:.3f}", f"{f.generate_s:.3f}", f"{f.logp_s:.3f}",
                      f"{f.reward_s:.3f}", f"{f.update_s:.3f}", f"{f.step_s / one.step_s:.3f}")
    out.print(table)
    out.print(f"threads: torch threads per process. x step: step time relative to the first row; with several "
              f"processes each time is the slowest process's. {n} processes share {threads} threads; the 1-process "
              "row with as many threads as each of them separates the effect of sharding the batch (and averaging "
              "gradients over gloo) from the effect of fewer threads per process.")


def _non_negative(text: str) -> int:
    """A whole number >= 0 (a staleness bound)."""
    if not text.isdigit():
        raise ValueError(f"{text!r} is not a whole number >= 0")
    return int(text)
