"""`botgrpo reward`: run reward services and score rollout files offline."""

import typer

from botgrpo_cli.errors import NotBuiltYet

reward_app = typer.Typer(help="Run reward services (serve) and score rollout files (score).", no_args_is_help=True)


@reward_app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def serve(ctx: typer.Context) -> None:
    """Run one reward service on stdin/stdout (or HTTP with --http)."""
    raise NotBuiltYet("`botgrpo reward serve`", 3)


@reward_app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def score(ctx: typer.Context) -> None:
    """Score a JSONL rollout file through a reward service."""
    raise NotBuiltYet("`botgrpo reward score`", 3)


def register(app: typer.Typer) -> None:
    from botgrpo_cli.cli import reward_render

    reward_render.register(reward_app)
    app.add_typer(reward_app, name="reward", help="Reward services: serve one, or score rollout files offline.")
