"""`botgrpo bench step`."""

import typer

from botgrpo_cli.errors import NotBuiltYet


def register(app: typer.Typer) -> None:
    @app.command("step", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
    def bench_step(ctx: typer.Context) -> None:
        """Benchmark: step."""
        raise NotBuiltYet("`botgrpo bench step`", 6)
