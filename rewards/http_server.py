"""The protocol over HTTP (stdlib only): POST /v1/score, GET /v1/health, GET /v1/info.

One event-loop thread (asyncio) does all HTTP work for every connection; scoring runs on the
service runner's bounded pool of threads, whose answers are handed back to the loop. So 16 busy
keep-alive connections cost one thread, not 16 threads fighting over the GIL.

Hardening, all in `HttpSettings`: a bearer token (`Authorization: Bearer T`, checked on every
endpoint; a bind beyond loopback without one is refused unless explicitly allowed), a body size
limit, a cap on requests per POST (whose requests enter the runner a window at a time, so one huge
POST cannot make other clients wait behind all of it), a timeout (idle keep-alive connections; a
whole request, head and body, must arrive within it of its first byte; answers a client does not
read), a shorter one for connections that have not yet sent an admitted request, a cap on open
connections and on such untrusted ones per peer address (at either cap the oldest idle untrusted
connection is closed to make room: sockets without the token never lock out clients with it), a
listen backlog of 1024, TCP_NODELAY and one write per response (no Nagle / delayed-ACK stall on
keep-alive connections). Client disconnects, timeouts and JSON nested too deep are one log line or
one 400 answer, never a traceback; repeated ones are summed up, one line per kind every 10 s.
Files: http_conn.py (a connection), http_routes.py (the endpoints).
"""

from __future__ import annotations

import asyncio
import collections
import logging
import os
import signal
import socket
import threading
from dataclasses import dataclass
from typing import Any, Callable

from botgrpo_rewards.http_conn import CLOSED, Connection
from botgrpo_rewards.http_routes import MAX_BATCH, expected_authorization
from botgrpo_rewards.log_tally import LogTally
from botgrpo_rewards.protocol import MAX_LINE_BYTES, TOKEN_ENV, refuse_open_bind
from botgrpo_rewards.service import ServiceRunner

log = logging.getLogger("botgrpo_rewards")

DEFAULT_MAX_BODY_BYTES = 8_000_000
MAX_BODY_BYTES = 4 * MAX_LINE_BYTES  # the largest --max-body-bytes accepted
BACKLOG = 1024
LOG_INTERVAL_S = 10.0  # repeated per-connection log lines: one summary per kind this often


@dataclass
class HttpSettings:
    """How the HTTP service is exposed (flags of `botgrpo reward serve --http`)."""

    token: str | None = None  # required bearer token; None = none required (loopback only)
    allow_remote_without_token: bool = False
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    timeout_s: float = 30.0  # idle connections, requests not received in full and unread answers: closed after it
    max_connections: int = 512
    header_timeout_s: float = 10.0  # a connection with no admitted request yet is closed this long after connecting
    max_untrusted_per_peer: int = 64  # connections from one address with no admitted request yet
    max_batch: int = MAX_BATCH  # requests in one POST

    @classmethod
    def from_env(cls, **overrides: Any) -> "HttpSettings":
        """Settings with the token from $BOTGRPO_REWARD_TOKEN unless one is given."""
        given = {k: v for k, v in overrides.items() if v is not None}
        given.setdefault("token", os.environ.get(TOKEN_ENV) or None)
        return cls(**given)


def parse_address(text: str) -> tuple[str, int]:
    """'HOST:PORT', '[IPv6]:PORT', ':PORT' or 'PORT' -> (host, port); the host defaults to 127.0.0.1."""
    host, sep, port = text.rpartition(":")
    if not sep:
        host, port = "", text
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    elif ":" in host:
        raise ValueError(f"--http: write an IPv6 address in brackets, e.g. [::1]:8765, got {text!r}")
    if not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"--http wants HOST:PORT (e.g. 127.0.0.1:8765 or [::1]:8765), got {text!r}")
    return host or "127.0.0.1", int(port)


def check_exposure(host: str, settings: HttpSettings) -> None:
    """Refuse to serve beyond loopback with no token, unless explicitly allowed."""
    refuse_open_bind(host, settings.token, settings.allow_remote_without_token, f"--token (or set {TOKEN_ENV})")
    if not settings.timeout_s > 0:
        raise ValueError(f"--http-timeout-s must be more than 0 seconds, got {settings.timeout_s}")
    if not settings.header_timeout_s > 0:
        raise ValueError(f"header_timeout_s must be more than 0 seconds, got {settings.header_timeout_s}")
    if settings.max_batch < 1 or settings.max_untrusted_per_peer < 1:
        raise ValueError("max_batch and max_untrusted_per_peer must be at least 1")
    if not 0 < settings.max_body_bytes <= MAX_BODY_BYTES:
        raise ValueError(f"--max-body-bytes must be in 1..{MAX_BODY_BYTES}, got {settings.max_body_bytes}")


class HttpServer:
    """The service on one listening socket. A single event-loop thread does all HTTP work
    (http_conn.py); scoring runs on the runner's threads, whose answers come back to the loop."""

    def __init__(self, runner: ServiceRunner, sock: socket.socket, settings: HttpSettings):
        self.runner = runner
        self.settings = settings
        self.expected = expected_authorization(settings.token)
        self.sock = sock
        self.conns: dict[Connection, None] = {}  # open connections, oldest first
        self.tally = LogTally(log, LOG_INTERVAL_S)
        self.loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None
        self._stop: asyncio.Event | None = None
        self._started = threading.Event()
        self._inbox: collections.deque[tuple[Callable[..., Any], tuple]] = collections.deque()
        self._inbox_lock = threading.Lock()
        self._wake_pending = False

    @property
    def address(self) -> tuple[str, int]:
        host, port = self.sock.getsockname()[:2]
        return host, port

    def serve(self) -> None:
        """Serve until `stop()` (or SIGTERM / SIGINT when run on the main thread)."""
        asyncio.run(self._serve())

    def stop(self) -> None:
        """From any thread, once `serve` is running."""
        self._started.wait()
        self.post(self._stop.set)  # type: ignore[union-attr]

    def now(self) -> float:
        return self.loop.time()  # type: ignore[union-attr]

    def post(self, fn: Callable[..., Any], *args: Any) -> None:
        """Run fn(*args) on the loop's thread soon; dropped once the loop has stopped. From other
        threads calls go through an inbox: answers finishing together wake the loop once."""
        if threading.get_ident() == self._loop_thread:
            self.loop.call_soon(fn, *args)  # type: ignore[union-attr]
            return
        self._inbox.append((fn, args))
        with self._inbox_lock:
            if self._wake_pending:
                return
            self._wake_pending = True
        try:
            self.loop.call_soon_threadsafe(self._drain_inbox)  # type: ignore[union-attr]
        except RuntimeError:  # the loop is closed: shutting down, nobody is waiting for this answer
            pass

    def _drain_inbox(self) -> None:
        with self._inbox_lock:
            self._wake_pending = False  # a call posted from now on wakes the loop again
        while self._inbox:
            fn, args = self._inbox.popleft()
            try:
                fn(*args)
            except Exception as err:  # a bug costs one answer, in one line; the others still go out
                log.error("http: answering failed: %s: %s", type(err).__name__, err)

    def opened(self, conn: Connection) -> bool:
        """Whether a new connection may stay; it is counted when it may. Room is made by closing the
        oldest idle connection that has sent no admitted request (from the same peer when that
        peer holds max_untrusted_per_peer of them); with none to close, a new one over the cap is refused."""
        untrusted = [c for c in self.conns if c.evictable()]
        same_peer = [c for c in untrusted if c.peer == conn.peer]
        if len(same_peer) >= self.settings.max_untrusted_per_peer:
            self._evict(same_peer[0], f"{len(same_peer)} connections from it sent no admitted request")
        elif len(self.conns) >= self.settings.max_connections and untrusted:
            self._evict(untrusted[0], f"{len(self.conns)} connections are open and it sent no admitted request")
        if len(self.conns) >= self.settings.max_connections:
            self.tally.note(logging.WARNING, "connections refused at the connection cap",
                            "refusing a connection from %s: %d connections are open", conn.peer, len(self.conns))
            return False
        self.conns[conn] = None
        return True

    def _evict(self, conn: Connection, why: str) -> None:
        self.tally.note(logging.INFO, "connections closed to make room (no admitted request)",
                        "closing the connection from %s to make room: %s", conn.peer, why)
        self.closed(conn)
        conn.state = CLOSED
        if conn.transport is not None:
            conn.transport.abort()

    def closed(self, conn: Connection) -> None:
        self.conns.pop(conn, None)

    async def _serve(self) -> None:
        self.loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self.loop.set_exception_handler(self._log_loop_error)
        self._stop = asyncio.Event()
        if threading.current_thread() is threading.main_thread():  # stop cleanly under process managers too
            for sig in (signal.SIGTERM, signal.SIGINT):
                self.loop.add_signal_handler(sig, self._stop.set)
        listener = await self.loop.create_server(lambda: Connection(self), sock=self.sock, backlog=BACKLOG)
        sweeper = asyncio.create_task(self._sweep())
        self._started.set()
        try:
            await self._stop.wait()
        finally:
            sweeper.cancel()
            listener.close()
            for conn in list(self.conns):
                conn.state = CLOSED
                if conn.transport is not None:
                    conn.transport.abort()
            await asyncio.sleep(0)  # let the aborted connections finish
            self.tally.flush(everything=True)

    async def _sweep(self) -> None:
        """Close connections past their deadline (idle, a request arriving too slowly, answers unread)."""
        tick = min(1.0, max(0.05, min(self.settings.timeout_s, self.settings.header_timeout_s) / 4))
        while True:
            await asyncio.sleep(tick)
            now = self.now()
            for conn in [c for c in self.conns if c.deadline is not None and c.deadline <= now]:
                conn.expire()
            self.tally.flush()

    def _log_loop_error(self, loop: asyncio.AbstractEventLoop, context: dict) -> None:
        err = context.get("exception")
        self.tally.note(logging.INFO, "event-loop errors", "http: %s%s", context.get("message", "error"),
                        f": {type(err).__name__}: {err}" if err else "")


def listen(host: str, port: int) -> socket.socket:
    """A listening socket (backlog 1024: a burst of connects is queued, not retried after 1 s)."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(BACKLOG)
        sock.setblocking(False)
    except BaseException:
        sock.close()
        raise
    return sock


def bind(runner: ServiceRunner, host: str, port: int, settings: HttpSettings) -> HttpServer:
    """A bound server. Raises ValueError (one line) for an exposure, settings or address problem."""
    check_exposure(host, settings)
    try:
        return HttpServer(runner, listen(host, port), settings)
    except OSError as err:
        raise ValueError(f"cannot listen on {host}:{port}: {err.strerror or err}") from None


def serve_http(runner: ServiceRunner, host: str, port: int, settings: HttpSettings | None = None) -> int:
    """Serve until interrupted; logs the bound address (port 0 picks a free one) on stderr.
    Raises ValueError (one line) when the address or settings cannot be used."""
    settings = settings or HttpSettings.from_env()
    try:
        server = bind(runner, host, port, settings)
    except ValueError:
        runner.close()
        raise
    bound_host, bound_port = server.address
    shown = f"[{bound_host}]" if ":" in bound_host else bound_host
    log.info("serving %s on http://%s:%d%s", runner.backend.name, shown, bound_port,
             " (bearer token required)" if settings.token else "")
    try:
        server.serve()
    except KeyboardInterrupt:
        pass
    finally:
        server.sock.close()
        runner.close()
    return 0
