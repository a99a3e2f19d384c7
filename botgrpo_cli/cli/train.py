"""`botgrpo train`: RL training with BoT-GRPO or any baseline preset."""

import typer

from botgrpo_cli.errors import NotBuiltYet


def register(app: typer.Typer) -> None:
    @app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
    def train(ctx: typer.Context) -> None:
        """Train a model with BoT-GRPO or a baseline (GRPO, Dr. GRPO, DAPO, GSPO, PURE)."""
        raise NotBuiltYet("`botgrpo train`", 6)
