"""`botgrpo bench algos`."""

import typer

from botgrpo_cli.errors import NotBuiltYet


def register(app: typer.Typer) -> None:
    @app.command("algos", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
    def bench_algos(ctx: typer.Context) -> None:
        """Benchmark: algos."""
        raise NotBuiltYet("`botgrpo bench algos`", 2)
