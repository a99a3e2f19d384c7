"""`botgrpo bootstrap`: build a tiny local model for a task (tokenizer, Qwen2-style model, SFT)."""

import typer

from botgrpo_cli.errors import NotBuiltYet


def register(app: typer.Typer) -> None:
    @app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
    def bootstrap(ctx: typer.Context) -> None:
        """Build a tiny warm-started model for a task, locally (no hub needed)."""
        raise NotBuiltYet("`botgrpo bootstrap`", 6)
