"""`botgrpo bootstrap`: build a tiny local model for a task (tokenizer, Qwen2-style model, SFT)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from botgrpo_cli.cli.options import CHOICES, listing_choices
from botgrpo_cli.console import console, progress_bar
from botgrpo_cli.errors import UserError

STAGES = {"tokenizer": "training the tokenizer", "train": "supervised warm start",
          "sample": "sampling eval prompts", "score": "scoring samples"}


def register(app: typer.Typer) -> None:
    @app.command(cls=listing_choices(size="botgrpo_cli.bootstrap.build:RECIPES"))
    def bootstrap(
        task: Annotated[str, typer.Option("--task", help="task name, e.g. react_synth or arith_synth")],
        out_dir: Annotated[Optional[Path], typer.Option("--out", help="write the model here, not in the cache")] = None,
        seed: Annotated[int, typer.Option("--seed", help="seed for corpus, initialisation and sampling")] = 0,
        force: Annotated[bool, typer.Option("--force", help="rebuild even when a cached build exists")] = False,
        size: Annotated[str, typer.Option("--size", help=f"model size: {CHOICES}")] = "tiny",
        task_option: Annotated[Optional[list[str]], typer.Option(
            "--task-option", help="key=value passed to the task, e.g. sites=2 (repeatable); a variant "
                                  "gets its own cached model")] = None,
    ) -> None:
        """Build a tiny warm-started model for a task, locally (no hub needed), and print its base
        success rate. Cached under $BOTGRPO_CACHE or ~/.cache/botgrpo."""
        from botgrpo_cli.bootstrap import RECIPES, bootstrap as build, describe, read_info
        from botgrpo_cli.cli.evaluate import parse_task_options
        from botgrpo_tasks import get_task

        try:
            task_obj = get_task(task, seed=seed, **parse_task_options(task_option or []))
        except (TypeError, ValueError) as err:
            raise UserError(f"--task-option does not fit task {task!r}: {err}") from None
        if size not in RECIPES:
            raise UserError(f"unknown size {size!r}; choose one of: {', '.join(RECIPES)}")
        with progress_bar(elapsed=True) as bar:
            ids: dict[str, int] = {}

            def on_progress(stage: str, done: int, total: int) -> None:
                if stage not in ids:
                    ids[stage] = bar.add_task(STAGES.get(stage, stage), total=total)
                bar.update(ids[stage], completed=done)

            try:
                path = build(task_obj, out=out_dir, seed=seed, force=force, size=size, progress=on_progress)
            except NotImplementedError as err:
                raise UserError(f"task {task!r} cannot be bootstrapped: {err}") from None
        console.print(f"{task_obj.name}: {describe(read_info(path))}")
        typer.echo(str(path))  # stdout: the path alone, for scripts
