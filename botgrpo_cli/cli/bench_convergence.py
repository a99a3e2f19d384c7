"""`botgrpo bench convergence`."""

import typer

from botgrpo_cli.errors import NotBuiltYet


def register(app: typer.Typer) -> None:
    @app.command("convergence", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
    def bench_convergence(ctx: typer.Context) -> None:
        """Benchmark: convergence."""
        raise NotBuiltYet("`botgrpo bench convergence`", 8)
