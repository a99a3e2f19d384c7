"""`botgrpo bench algos`: advantage estimators timed against a masked-sum floor and a per-group loop."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from botgrpo_cli.cli.options import Threads
from botgrpo_cli.console import console, out
from botgrpo_cli.errors import UserError

if TYPE_CHECKING:  # the benchmark imports torch: load it only when the command runs
    from botgrpo_cli.bench.algos import Report

FLOOR, BOT, LOOP = "masked sum (floor)", "bot_grpo", "bot_grpo per-group loop"


def _check(batch: int, groups: int, seq_len: int, repeats: int) -> None:
    if min(batch, groups, seq_len, repeats) < 1:
        raise UserError("--batch, --groups, --seq-len and --repeats must all be at least 1.")
    if groups > batch:
        raise UserError(f"--groups ({groups}) cannot exceed --batch ({batch}); lower --groups.")


def _table(report: "Report", batch: int, groups: int, seq_len: int) -> Table:
    floor = next(r for r in report.results if r.name == FLOOR).median_s
    table = Table(title=f"advantage estimators, B={batch} ({groups} groups), T={seq_len}, float32, "
                        f"{report.threads} torch threads")
    for column in ("estimator", "median ms", "x floor", "peak extra (B,T) tensors"):
        table.add_column(column, justify="left" if column == "estimator" else "right")
    for r in report.results:
        peak = "n/a" if r.peak_extra is None else f"{r.peak_extra:.2f}"
        table.add_row(r.name, f"{r.median_s * 1e3:.1f}", f"{r.median_s / floor:.2f}", peak)
    return table


def register(app: typer.Typer) -> None:
    @app.command("algos")
    def bench_algos(
        batch: Annotated[int, typer.Option(help="Completions per batch (B).")] = 1024,
        groups: Annotated[int, typer.Option(help="Prompt groups in the batch.")] = 128,
        seq_len: Annotated[int, typer.Option(help="Padded completion length (T).")] = 8192,
        repeats: Annotated[int, typer.Option(help="Timed runs per estimator; medians are reported.")] = 5,
        threads: Threads = 1,
    ) -> None:
        """Time bot_grpo, grpo and pure against one masked sum and a per-group loop of bot_grpo."""
        _check(batch, groups, seq_len, repeats)
        with console.status("benchmarking estimators...") as status:
            from botgrpo_cli.bench.algos import run

            report = run(batch, groups, seq_len, repeats, threads=threads or None,
                          progress=lambda msg: status.update(msg))
        out.print(_table(report, batch, groups, seq_len))
        by_name = {r.name: r for r in report.results}
        bot, loop, floor = by_name[BOT], by_name[LOOP], by_name[FLOOR]
        out.print(f"per-group loop agrees with bot_grpo: max |diff| = {report.loop_max_abs_diff:.2e}")
        out.print(f"per-group loop / bot_grpo: {loop.median_s / bot.median_s:.2f}x (target >= 3)")
        out.print(f"bot_grpo / floor: {bot.median_s / floor.median_s:.2f}x (target <= 4)")
        peak = "n/a" if bot.peak_extra is None else f"{bot.peak_extra:.2f}"
        out.print(f"bot_grpo peak extra memory: {peak} (B,T) tensors incl. its output (target <= 3)")
