"""`botgrpo bench eval`."""

import typer

from botgrpo_cli.errors import NotBuiltYet


def register(app: typer.Typer) -> None:
    @app.command("eval", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
    def bench_eval(ctx: typer.Context) -> None:
        """Benchmark: eval."""
        raise NotBuiltYet("`botgrpo bench eval`", 7)
