"""`botgrpo bench rewards`."""

import typer

from botgrpo_cli.errors import NotBuiltYet


def register(app: typer.Typer) -> None:
    @app.command("rewards", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
    def bench_rewards(ctx: typer.Context) -> None:
        """Benchmark: rewards."""
        raise NotBuiltYet("`botgrpo bench rewards`", 3)
