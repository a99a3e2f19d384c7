"""`botgrpo bench rewards --service function`: a Python reward function against the built-in math
service, each over stdio (RewardPool: the trainer's local processes) and over HTTP (RemotePool:
`reward.url`), on the same completions, side by side.

The completions are `n` distinct integer answers in math's format (half right), so the math
service decides each on its integer fast path and the figures show what the paths cost: the
protocol, the processes, the batching of the function service. Every answer is checked (status
ok, the expected score sign), so a failure is counted, never hidden by a fast figure. Each path
is timed `repeats` times (median) from the first request submitted to the last answer; start-up
is timed once, apart.
"""

from __future__ import annotations

import secrets
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from rich.console import Console
from rich.table import Table

from botgrpo_cli.bench.http_load import http_service
from botgrpo_cli.errors import UserError
from botgrpo_rewards.protocol import ScoreRequest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "extending" / "reward_function.py"
DEFAULT_FUNCTION = f"{EXAMPLE}:contains_answer"


@dataclass
class PathResult:
    label: str
    start_s: float
    seconds: list[float]
    errors: int
    n: int

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)


def requests(n: int, round_: int) -> list[ScoreRequest]:
    """n distinct completions, the even ones right (round_ makes each repeat's texts new)."""
    out = []
    for i in range(n):
        k = 1000 * round_ + i
        given = k if i % 2 == 0 else k + 1
        out.append(ScoreRequest(id=f"b{i}", prompt=f"What is {k}?", completion=f"Working it out.\n\nSo the answer "
                                f"is $\\boxed{{{given}}}$.", reference={"answer": str(k)}))
    return out


def _wrong(resp: Any, i: int) -> bool:
    return not (resp.usable and ((resp.score > 0) == (i % 2 == 0)))


def measure(label: str, open_pool: Callable[[], Any], n: int, repeats: int) -> PathResult:
    t0 = time.perf_counter()
    pool = open_pool()
    start = time.perf_counter() - t0
    seconds, errors = [], 0
    try:
        pool.score(requests(min(n, 16), 99))  # warm: first connections, first batch
        for r in range(repeats):
            batch = requests(n, r)
            t = time.perf_counter()
            answers = pool.score(batch)
            seconds.append(time.perf_counter() - t)
            errors += sum(_wrong(a, i) for i, a in enumerate(answers))
    finally:
        pool.close()
    return PathResult(label, start, seconds, errors, n)


def run(console: Console, function: str | None = None, n: int = 1000, repeats: int = 3, workers: int = 1) -> None:
    from botgrpo_cli.reward_client import RewardPool
    from botgrpo_cli.reward_client.opening import function_command
    from botgrpo_cli.reward_client.remote import RemotePool

    if function is None and not EXAMPLE.is_file():  # an installed package ships no examples/
        raise UserError(f"the example function {EXAMPLE} is not here; pass --function FILE.py:NAME")
    spec = function or DEFAULT_FUNCTION
    command = function_command(spec)
    token = secrets.token_hex(8)
    results = [measure("math, stdio", lambda: RewardPool("math", workers=workers), n, repeats),
               measure("function, stdio", lambda: RewardPool("function", workers=workers, command=command), n, repeats)]
    for label, service, options in (("math, HTTP", "math", ()), ("function, HTTP", "function", ("--function", command[-1]))):
        with http_service(service, token, *options) as (host, port):
            url = f"http://{host}:{port}"
            results.append(measure(label, lambda: RemotePool([url], token=token), n, repeats))
    table = Table(title=f"reward paths: {n} completions per run, median of {repeats} (function {spec.rsplit('/', 1)[-1]})")
    for col in ("path", "start s", "seconds", "completions/s", "ms per completion", "errors"):
        table.add_column(col, justify="left" if col == "path" else "right")
    for r in results:
        table.add_row(r.label, f"{r.start_s:.2f}", f"{r.median:.3f}", f"{r.n / r.median:.0f}",
                      f"{1000 * r.median / r.n:.3f}", str(r.errors))
    console.print(table)
