"""`botgrpo bench rewards --service NAME`: runs botgrpo_cli.bench.rewards_<NAME>.run(...)."""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
from typing import Annotated

import typer

from botgrpo_cli.errors import UserError


def _available() -> list[str]:
    import botgrpo_cli.bench as bench_pkg

    return sorted(m.name.removeprefix("rewards_") for m in pkgutil.iter_modules(bench_pkg.__path__) if m.name.startswith("rewards_"))


def register(app: typer.Typer) -> None:
    @app.command("rewards")
    def bench_rewards(
        service: Annotated[str, typer.Option("--service", "-s", help="Reward service to benchmark (math, react, render).")],
        workers: Annotated[int, typer.Option("--workers", "-w", min=1, help="Service processes.")] = 2,
        n: Annotated[int, typer.Option("--n", min=1, help="Requests to score.")] = 200,
        http: Annotated[bool, typer.Option("--http", help="Load the service's HTTP server instead: req/s and "
                                                          "p50/p99 over 1 and 16 keep-alive connections.")] = False,
    ) -> None:
        """Benchmark a reward service: throughput and latency, figures measured side by side."""
        from botgrpo_cli.console import out

        if http:
            from botgrpo_cli.bench.http_load import run

            run(console=out, service=service, n=n)
            return

        module_name = f"botgrpo_cli.bench.rewards_{service}"
        if not service.isidentifier() or importlib.util.find_spec(module_name) is None:
            known = ", ".join(_available()) or "none yet"
            raise UserError(f"no reward benchmark for service {service!r} ({module_name} is missing); available: {known}")
        importlib.import_module(module_name).run(console=out, workers=workers, n=n)
