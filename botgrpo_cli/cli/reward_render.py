"""`botgrpo reward render`: render a rollout file's components to PNGs and an HTML contact sheet."""

import typer

from botgrpo_cli.errors import NotBuiltYet


def register(app: typer.Typer) -> None:
    @app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
    def render(ctx: typer.Context) -> None:
        """Render each completion of a rollout file to a PNG and write an HTML contact sheet."""
        raise NotBuiltYet("`botgrpo reward render`", 5)
