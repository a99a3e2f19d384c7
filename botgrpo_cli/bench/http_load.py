"""`botgrpo bench rewards --service math --http`: the HTTP service under keep-alive load.

Starts `python -m botgrpo_rewards math --http 127.0.0.1:0` with a token, then sends `n` distinct
score requests (each a different integer answer, so no verdict cache helps) over 1 and over 16
keep-alive connections, and, for comparison, over a new connection per request. The 16
connections are driven from several client processes (one Python client process is itself
GIL-bound near the server's rate and would measure the client). Prints req/s and
per-request latency p50 / p99 from send to parsed response; every answer is checked (status ok,
score 1), so an error or a wrong answer is counted, never hidden by a fast figure.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import secrets
import subprocess
import sys
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from multiprocessing import get_context
from dataclasses import dataclass
from typing import Iterator

from rich.console import Console
from rich.table import Table

from botgrpo_cli.errors import UserError

STARTUP_TIMEOUT_S = 120


@dataclass
class LoadResult:
    label: str
    connections: int
    requests: int
    errors: int
    seconds: float
    latencies_ms: list[float]

    @property
    def rate(self) -> float:
        return self.requests / self.seconds if self.seconds > 0 else 0.0

    def percentile(self, q: float) -> float:
        ordered = sorted(self.latencies_ms)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def math_body(i: int) -> bytes:
    answer = 1000 + i
    return json.dumps({"id": i, "completion": f"Adding up the parts gives $\\boxed{{{answer}}}$.",
                       "reference": {"answer": str(answer)}}).encode()


@contextmanager
def http_service(service: str, token: str) -> Iterator[tuple[str, int]]:
    """A running `python -m botgrpo_rewards SERVICE --http 127.0.0.1:0`; yields (host, port)."""
    proc = subprocess.Popen([sys.executable, "-m", "botgrpo_rewards", service, "--http", "127.0.0.1:0"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "BOTGRPO_REWARD_TOKEN": token})
    found: list[tuple[str, int]] = []
    ready = threading.Event()

    def pump() -> None:
        for line in proc.stderr:  # keep draining: a full pipe would stall the service
            m = re.search(r"serving \S+ on http://([^\s:]+):(\d+)", line)
            if m and not found:
                found.append((m.group(1), int(m.group(2))))
                ready.set()
        ready.set()
    threading.Thread(target=pump, daemon=True).start()
    try:
        if not ready.wait(STARTUP_TIMEOUT_S) or not found:
            raise UserError(f"the {service} HTTP service did not start within {STARTUP_TIMEOUT_S} s")
        yield found[0]
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()


def _one(conn: http.client.HTTPConnection, body: bytes, headers: dict) -> bool:
    conn.request("POST", "/v1/score", body=body, headers=headers)
    resp = conn.getresponse()
    answer = json.loads(resp.read())
    return resp.status == 200 and answer.get("status") == "ok" and answer.get("score") == 1.0


def load(address: tuple[str, int], token: str, n: int, connections: int, keep_alive: bool = True,
         first: int = 0) -> LoadResult:
    """n requests split over `connections` client threads (each its own connection, reused when
    keep_alive, else a new one per request)."""
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {token}"}
    latencies: list[float] = []
    errors = [0]
    lock = threading.Lock()

    def client(k: int) -> None:
        conn = http.client.HTTPConnection(*address, timeout=30)
        mine, bad = [], 0
        for i in range(first + k, first + n, connections):
            t0 = time.perf_counter()
            try:
                ok = _one(conn, math_body(i), headers)
            except (OSError, http.client.HTTPException, ValueError):
                ok = False
                conn.close()
            mine.append((time.perf_counter() - t0) * 1e3)
            bad += not ok
            if not keep_alive:
                conn.close()
        conn.close()
        with lock:
            latencies.extend(mine)
            errors[0] += bad

    threads = [threading.Thread(target=client, args=(k,)) for k in range(connections)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    seconds = time.perf_counter() - start
    label = f"{connections} keep-alive" if keep_alive else f"{connections}, new connection each"
    return LoadResult(label, connections, n, errors[0], seconds, latencies)


def _part(args: tuple) -> LoadResult:
    return load(*args)


def load_processes(pool: ProcessPoolExecutor, processes: int, address: tuple[str, int], token: str, n: int,
                   connections: int, keep_alive: bool = True, first: int = 0) -> LoadResult:
    """`load` split over `processes` client processes (each its share of connections and requests)."""
    parts = [(address, token, n // processes + (k < n % processes), connections // processes, keep_alive,
              first + k * n) for k in range(processes)]
    start = time.perf_counter()
    results = list(pool.map(_part, parts))
    seconds = time.perf_counter() - start
    label = f"{connections} keep-alive ({processes} client processes)" if keep_alive else f"{connections}, new connection each"
    return LoadResult(label, connections, n, sum(r.errors for r in results), seconds,
                      [x for r in results for x in r.latencies_ms])


def run(console: Console, service: str = "math", n: int = 2000, repeats: int = 3) -> list[LoadResult]:
    """Median-of-`repeats` figures for 1 and 16 keep-alive connections and 1 without keep-alive."""
    if service != "math":
        raise UserError(f"the --http benchmark has requests for the math service only, not {service!r}")
    token = secrets.token_hex(16)
    setups = [(1, True), (16, True), (1, False)]
    results: dict[tuple[int, bool], list[LoadResult]] = {s: [] for s in setups}
    processes = 2 if (os.cpu_count() or 1) <= 2 else 4
    with http_service(service, token) as address, ProcessPoolExecutor(processes, mp_context=get_context("spawn")) as pool:
        # warm-up: starts the client processes and the service's caches (its own answers, in no figure)
        load_processes(pool, processes, address, token, 400, 2 * processes, first=10_000_000)
        for r in range(repeats):
            for conns, keep in setups:
                first = (r + 1) * 1_000_000
                results[(conns, keep)].append(load_processes(pool, processes, address, token, n, conns, keep, first)
                                              if conns > 1 else load(address, token, n, conns, keep, first))
    medians = [sorted(runs, key=lambda x: x.rate)[len(runs) // 2] for runs in results.values()]
    _print(console, medians, n, repeats)
    return medians


def _print(console: Console, results: list[LoadResult], n: int, repeats: int) -> None:
    load_avg = " / ".join(f"{x:.1f}" for x in os.getloadavg())
    table = Table(title=f"math over HTTP: {n} requests per run, median of {repeats} runs (load average {load_avg})")
    for col in ("connections", "req/s", "p50 ms", "p99 ms", "errors"):
        table.add_column(col, justify="right" if col != "connections" else "left")
    for r in results:
        table.add_row(r.label, f"{r.rate:.0f}", f"{r.percentile(0.5):.2f}", f"{r.percentile(0.99):.2f}", str(r.errors))
    console.print(table)
    one, many = results[0], results[1]
    console.print(f"16 vs 1 keep-alive connections: {many.rate / one.rate:.2f}x req/s; "
                  f"p50 {many.percentile(0.5):.2f} ms at 16 connections")
