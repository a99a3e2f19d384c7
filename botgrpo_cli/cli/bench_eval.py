"""`botgrpo bench eval`: eval-pipeline throughput (generate + score) per task with 1 and 2 reward workers."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Optional

import typer
from rich.table import Table

from botgrpo_cli.cli.options import Threads, comma_list, positive_int, set_threads

if TYPE_CHECKING:
    from botgrpo_cli.bench.eval import Row


def _table(rows: list["Row"], n: int, problems: int, repeats: int) -> Table:
    table = Table(title=f"eval pipeline (generate + score): {problems} problems x {n} samples, median of "
                        f"{repeats} runs", caption="compl. = completions; x gen. = time / generation alone; "
                        "start s = service start-up (not in the rate)")
    for column in ("task", "workers", "compl.", "median s", "compl./s", "x gen.", "start s"):
        table.add_column(column, justify="left" if column == "task" else "right", no_wrap=True)
    alone = {r.task: r for r in rows if r.workers == 0}
    for r in rows:
        table.add_row(r.task, "gen. only" if r.workers == 0 else str(r.workers), str(r.completions),
                      f"{r.median_s:.2f}", f"{r.per_s:.1f}", f"{r.median_s / alone[r.task].median_s:.2f}x",
                      "–" if r.workers == 0 else f"{r.start_s:.1f}")
    return table


def register(app: typer.Typer) -> None:
    @app.command("eval")
    def bench_eval(
        task: Annotated[Optional[list[str]], typer.Option("--task", help="Tasks to run (repeatable; default "
                                                          "react_synth and arith_synth).")] = None,
        workers: Annotated[str, typer.Option("--workers", help="Reward worker counts, comma-separated.")] = "1,2",
        problems: Annotated[int, typer.Option("--problems", min=1, help="Eval problems per run.")] = 8,
        n: Annotated[int, typer.Option("--n", min=1, help="Samples per problem.")] = 4,
        repeats: Annotated[int, typer.Option("--repeats", min=1, help="Timed runs; medians are reported.")] = 3,
        max_new_tokens: Annotated[Optional[int], typer.Option("--max-new-tokens", help="Default: the task's.")] = None,
        render: Annotated[bool, typer.Option("--render/--no-render", help="Include the render pass for React tasks "
                                             "(as `botgrpo eval` does by default).")] = True,
        threads: Threads = 1,
    ) -> None:
        """Completions scored per second through `botgrpo eval`'s pipeline, per task and worker count."""
        from botgrpo_cli.console import console, out

        counts = tuple(comma_list(workers, "--workers", positive_int, "1,2"))
        set_threads(threads)
        from botgrpo_cli.bench.eval import TASKS, run

        with console.status("benchmarking the eval pipeline...") as status:
            rows = run(tuple(task or TASKS), counts, problems, n, repeats, max_new_tokens, render,
                       progress=lambda msg: status.update(msg))
        out.print(_table(rows, n, problems, repeats))
