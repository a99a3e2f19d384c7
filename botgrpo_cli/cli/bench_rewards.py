"""`botgrpo bench rewards --service NAME [--corpus FILE]`: the service's own benchmark
(botgrpo_rewards/<NAME>/bench.py), run as a child process, as the services themselves run: the client
imports no backend code; a corpus the user gives goes to it as a path. With
--http: botgrpo_cli/bench/http_load.py loads the service's HTTP server as a client."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from botgrpo_cli.cli.options import CHOICES, Workers, listing_choices
from botgrpo_cli.errors import UserError


def register(app: typer.Typer) -> None:
    @app.command("rewards", cls=listing_choices(service="botgrpo_rewards.registry:SERVICES"))
    def bench_rewards(
        service: Annotated[str, typer.Option("--service", "-s", help=f"Reward service to benchmark: {CHOICES}.")],
        workers: Workers = 2,
        n: Annotated[Optional[int], typer.Option("--n", min=1, help="Requests to score (default 200; with --http 2000 "
                                                                    "per run).")] = None,
        http: Annotated[bool, typer.Option("--http", help="Load the service's HTTP server instead: req/s and "
                                                          "p50/p99 over 1 and 16 keep-alive connections.")] = False,
        function: Annotated[Optional[str], typer.Option("--function", help="With --service function: the reward "
                                                        "function (default: examples/extending/reward_function.py:"
                                                        "contains_answer), timed beside math, stdio and HTTP.")] = None,
        corpus: Annotated[Optional[Path], typer.Option("--corpus", help="Also measure on this graded corpus "
                                                       "(math): JSONL, each line a `reward score` request line with "
                                                       "\"correct\": true|false and an optional \"group\" "
                                                       "(docs/rewards.md); accuracy per group beside the speed.")] = None,
    ) -> None:
        """Benchmark a reward service: throughput and latency, figures measured side by side."""
        from botgrpo_cli.cli.reward import check_service_name

        check_service_name(service)
        if corpus is not None and (http or service == "function"):
            raise UserError("--corpus is measured by the service's own benchmark: leave out --http "
                            "(and use a service such as math, not function)")
        if service == "function":  # a client of both services on both paths, side by side
            from botgrpo_cli.bench.reward_paths import run as run_paths
            from botgrpo_cli.console import out

            run_paths(out, function=function, n=n or 1000, workers=workers)
            return
        if http:  # a client of the HTTP service: like the trainer, it imports no backend code
            from botgrpo_cli.bench.http_load import run
            from botgrpo_cli.console import out

            run(console=out, service=service, n=n or 2000)
            return
        corpus_args = ["--corpus", str(corpus)] if corpus is not None else []
        code = _child_bench([sys.executable, "-m", "botgrpo_rewards.bench", service, str(workers), str(n or 200),
                             *corpus_args])
        if code != 0:
            raise UserError(f"the {service} benchmark failed (exit code {code}); its message is above")


def _child_bench(argv: list[str]) -> int:
    """Run a service's own benchmark; under `bench --json` its output is also recorded (as text)."""
    from botgrpo_cli.console import out

    if out.recorder is None:
        return subprocess.call(argv)
    # Wide, so its tables are not wrapped when piped; its output is shown once it is done.
    proc = subprocess.run(argv, stdout=subprocess.PIPE, text=True, env={**os.environ, "COLUMNS": "200"})
    sys.stdout.write(proc.stdout)
    out.recorder.child_output(proc.stdout)
    return proc.returncode
