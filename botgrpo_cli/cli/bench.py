"""`botgrpo bench`: benchmarks that print figures measured side by side in one run.

Each benchmark registers itself from its own module under botgrpo_cli/cli/bench_*.py.
"""

from pathlib import Path
from typing import Annotated, Optional

import typer

from botgrpo_cli.console import out


def _record(ctx: typer.Context, json_out: Annotated[Optional[Path], typer.Option(
        "--json", help="Also write what the benchmark prints (tables, lines) to this JSON file, with the command, "
                       "commit, time and load average; research/pages/make_pages.py makes a page of such files.",
        dir_okay=False)] = None) -> None:
    if json_out is not None:
        from botgrpo_cli.bench.record import Recorder

        out.recorder = Recorder(json_out)
        ctx.call_on_close(lambda: setattr(out, "recorder", None))  # a failed command: nothing kept, nothing written


def _written(*_args, **_kwargs) -> None:
    """After a bench command succeeded: write its record (a failed one writes nothing)."""
    if out.recorder is not None:
        path = out.recorder.write()
        out.recorder = None  # before the line below, which is not part of the record
        out.print(f"recorded in {path}")


bench_app = typer.Typer(help="Benchmarks: algorithms, reward services, training step, convergence.", no_args_is_help=True,
                        callback=_record, result_callback=_written)


def register(app: typer.Typer) -> None:
    from botgrpo_cli.cli import bench_algos, bench_convergence, bench_eval, bench_rewards, bench_rollout, bench_step

    for module in (bench_algos, bench_rewards, bench_rollout, bench_step, bench_convergence, bench_eval):
        module.register(bench_app)
    app.add_typer(bench_app, name="bench", help="Benchmarks: algorithms, reward services, step time, convergence.")
