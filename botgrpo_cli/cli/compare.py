"""`botgrpo compare`: curves and a table comparing training runs."""

import typer

from botgrpo_cli.errors import NotBuiltYet


def register(app: typer.Typer) -> None:
    @app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
    def compare(ctx: typer.Context) -> None:
        """Compare runs: metric vs step and vs wall time, steps to target, final values."""
        raise NotBuiltYet("`botgrpo compare`", 7)
