"""`botgrpo compare`: curves and a table comparing training runs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer


def register(app: typer.Typer) -> None:
    @app.command()
    def compare(
        runs: Annotated[list[Path], typer.Argument(help="Run directories of `botgrpo train` (or metrics.jsonl files).")],
        out: Annotated[Path, typer.Option("--out", help="Folder for compare.png and compare.md.")],
        metric: Annotated[Optional[str], typer.Option("--metric", help="metrics.jsonl key, or a short name tried "
                                                      "as eval/NAME then reward/NAME, or a curves.png panel "
                                                      "(reward, success, KL, length, entropy) (default: "
                                                      "eval/success when every run evaluated, else success).")] = None,
        target: Annotated[Optional[float], typer.Option("--target", help="Report the first step and wall time "
                                                        "at which each run reaches this value.")] = None,
    ) -> None:
        """Compare runs: metric vs step and vs wall time, steps to target, final values."""
        from botgrpo_cli.console import out as stdout
        from botgrpo_cli.evaluation import compare_runs

        png, md, text = compare_runs(runs, out, metric, target)
        stdout.print(text, markup=False, soft_wrap=True)
        stdout.print(f"\nwrote {png} and {md}")
