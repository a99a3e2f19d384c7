"""`botgrpo bench rewards --service math --http`: the HTTP service under keep-alive load.

Starts `python -m botgrpo_rewards math --http 127.0.0.1:0` with a token, then sends `n` distinct
score requests (each a different integer answer, so no verdict cache helps) over 1 and over 16
keep-alive connections, and, for comparison, over a new connection per request. The client is
one thread driving every connection with a selector and raw HTTP/1.1 (an http.client thread per
connection cost more CPU per request than the server and, on 2 cores, measured itself). Prints
req/s and per-request latency p50 / p99 from send to parsed response; every answer is checked
(status ok, score 1), so an error or a wrong answer is counted, never hidden by a fast figure.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import selectors
import socket
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

from rich.console import Console
from rich.table import Table

from botgrpo_cli.errors import UserError
from botgrpo_rewards.protocol import TOKEN_ENV, LineChild

STARTUP_TIMEOUT_S = 120
CLIENT_TIMEOUT_S = 30


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
def http_service(service: str, token: str, *options: str) -> Iterator[tuple[str, int]]:
    """A running `python -m botgrpo_rewards SERVICE OPTIONS --http 127.0.0.1:0`; yields (host, port)."""
    argv = [sys.executable, "-m", "botgrpo_rewards", service, *options, "--http", "127.0.0.1:0"]
    child = LineChild(argv, f"{service}-http",
                      env={TOKEN_ENV: token}, stderr="tail", own_group=True)  # the log is drained, kept short
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while not (m := re.search(r"serving \S+ on http://([^\s:]+):(\d+)", child.stderr_tail())):
            if child.exited or time.monotonic() > deadline:
                raise UserError(f"the {service} HTTP service did not start within {STARTUP_TIMEOUT_S} s")
            time.sleep(0.05)
        yield m.group(1), int(m.group(2))
    finally:
        child.kill()  # its whole process group (the service's workers too)


class _Conn:
    """One client connection of `load`: at most one request in flight (a closed loop)."""

    def __init__(self, address: tuple[str, int]):
        self.sock = socket.create_connection(address, timeout=CLIENT_TIMEOUT_S)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock.setblocking(False)
        self.buf = bytearray()
        self.sent_at = 0.0

    def send(self, request: bytes) -> None:
        self.buf.clear()
        self.sent_at = time.perf_counter()
        self.sock.setblocking(True)  # a request is small: one blocking send, then back to the selector
        self.sock.sendall(request)
        self.sock.setblocking(False)

    def answer(self) -> tuple[bool, bool] | None:
        """Read what arrived: None until the whole answer is in, then (right, server_closes)."""
        chunk = self.sock.recv(1 << 16)
        if not chunk:
            raise ConnectionError("the server closed the connection")
        self.buf += chunk
        end = self.buf.find(b"\r\n\r\n")
        if end < 0:
            return None
        head = bytes(self.buf[:end]).lower()
        length = re.search(rb"\r\ncontent-length: *(\d+)", head)
        if length is None or len(self.buf) < end + 4 + int(length.group(1)):
            return None
        answer = json.loads(bytes(self.buf[end + 4:]))
        right = head.startswith(b"http/1.1 200 ") and answer.get("status") == "ok" and answer.get("score") == 1.0
        return right, b"\r\nconnection: close" in head

    def close(self) -> None:
        self.sock.close()


def score_request(i: int, token: str) -> bytes:
    body = math_body(i)
    return (f"POST /v1/score HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n"
            f"Authorization: Bearer {token}\r\nContent-Length: {len(body)}\r\n\r\n").encode() + body


class _ClosedLoop:
    """Drives `connections` connections from one thread: each sends its next request as soon as
    its answer is in. Errors (a failed send, a wrong answer, a closed connection) are counted."""

    def __init__(self, address: tuple[str, int], requests: list[bytes], keep_alive: bool):
        self.address, self.requests, self.keep_alive = address, requests, keep_alive
        self.sel = selectors.DefaultSelector()
        self.latencies: list[float] = []
        self.errors = self.sent = 0

    def run(self, connections: int) -> None:
        for _ in range(connections):
            self._send_next(None)
        while self.sel.get_map():
            ready = self.sel.select(CLIENT_TIMEOUT_S)
            if not ready:
                raise UserError(f"the HTTP service did not answer within {CLIENT_TIMEOUT_S} s")
            for key, _ in ready:
                self._read(key.data)

    def _read(self, conn: _Conn) -> None:
        try:
            got = conn.answer()
        except (OSError, ValueError):
            got = (False, True)
        if got is None:
            return
        self.latencies.append((time.perf_counter() - conn.sent_at) * 1e3)
        self.errors += not got[0]
        self.sel.unregister(conn.sock)
        if got[1] or not self.keep_alive:
            conn.close()
            self._send_next(None)
        else:
            self._send_next(conn)

    def _send_next(self, conn: _Conn | None) -> None:
        """Send the next request on conn (a new connection when None); a failed send is an error."""
        while self.sent < len(self.requests):
            request = self.requests[self.sent]
            self.sent += 1
            try:
                conn = conn or _Conn(self.address)
                conn.send(request)
            except OSError:
                self.errors += 1
                if conn is not None:
                    conn.close()
                conn = None
                continue
            self.sel.register(conn.sock, selectors.EVENT_READ, conn)
            return
        if conn is not None:
            conn.close()


def load(address: tuple[str, int], token: str, n: int, connections: int, keep_alive: bool = True,
         first: int = 0) -> LoadResult:
    """n requests over `connections` connections (a new connection per request unless keep_alive),
    all driven from this one thread by a selector: one thread and no HTTP library keep the
    client's own cost per request small beside the server's on a machine with few cores."""
    loop = _ClosedLoop(address, [score_request(i, token) for i in range(first, first + n)], keep_alive)
    start = time.perf_counter()  # the requests are built before the clock starts
    loop.run(connections)
    seconds = time.perf_counter() - start
    label = f"{connections} keep-alive" if keep_alive else f"{connections}, new connection each"
    return LoadResult(label, connections, n, loop.errors, seconds, loop.latencies)


def run(console: Console, service: str = "math", n: int = 2000, repeats: int = 3) -> list[LoadResult]:
    """Median-of-`repeats` figures for 1 and 16 keep-alive connections and 1 without keep-alive."""
    if service != "math":
        raise UserError(f"the --http benchmark has requests for the math service only, not {service!r}")
    token = secrets.token_hex(16)
    setups = [(1, True), (16, True), (1, False)]
    results: dict[tuple[int, bool], list[LoadResult]] = {s: [] for s in setups}
    with http_service(service, token) as address:
        load(address, token, 400, 4, first=10_000_000)  # warm-up (its own answers, in no figure)
        for r in range(repeats):
            for conns, keep in setups:
                results[(conns, keep)].append(load(address, token, n, conns, keep, first=(r + 1) * 1_000_000))
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
