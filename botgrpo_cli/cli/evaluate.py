"""`botgrpo eval`: Pass@k, compile rate and judged win rate for a model on a task."""

import typer

from botgrpo_cli.errors import NotBuiltYet


def register(app: typer.Typer) -> None:
    @app.command("eval", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
    def evaluate(ctx: typer.Context) -> None:
        """Evaluate a model on a task: Pass@k, compile rate, judged win rate."""
        raise NotBuiltYet("`botgrpo eval`", 7)
