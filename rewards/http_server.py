"""The protocol over HTTP (stdlib only): POST /v1/score, GET /v1/health, GET /v1/info.

Hardening, all in `HttpSettings`: a bearer token (`Authorization: Bearer T`, checked on every
endpoint; a bind beyond loopback without one is refused unless explicitly allowed), a body size
limit, a timeout for silent clients (idle keep-alive connections and stalled headers or bodies), a
cap on open connections, a listen backlog of 1024, TCP_NODELAY and one buffered write per
response (no Nagle / delayed-ACK stall on keep-alive connections). Client disconnects, timeouts
and JSON nested too deep are one log line or one 400 answer, never a traceback.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import logging
import os
import signal
import socket
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from botgrpo_rewards.protocol import (
    MAX_LINE_BYTES,
    ProtocolError,
    ScoreRequest,
    ScoreResponse,
    error_response,
    request_from_json,
)
from botgrpo_rewards.service import ServiceRunner

log = logging.getLogger("botgrpo_rewards")

TOKEN_ENV = "BOTGRPO_REWARD_TOKEN"
DEFAULT_MAX_BODY_BYTES = 8_000_000
MAX_BODY_BYTES = 4 * MAX_LINE_BYTES  # the largest --max-body-bytes accepted


@dataclass
class HttpSettings:
    """How the HTTP service is exposed (flags of `botgrpo reward serve --http`)."""

    token: str | None = None  # required bearer token; None = none required (loopback only)
    allow_remote_without_token: bool = False
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    timeout_s: float = 30.0  # a connection silent this long is closed
    max_connections: int = 512

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


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_exposure(host: str, settings: HttpSettings) -> None:
    """Refuse to serve beyond loopback with no token, unless explicitly allowed."""
    if settings.token is None and not is_loopback(host) and not settings.allow_remote_without_token:
        raise ValueError(f"refusing to serve on {host} without a token: anyone who can reach it could use the "
                         f"service; pass --token (or set {TOKEN_ENV}), bind 127.0.0.1, or pass "
                         "--allow-remote-without-token")
    if settings.token is not None and not settings.token.strip():
        raise ValueError("--token is empty; give a secret string")
    if not 0 < settings.max_body_bytes <= MAX_BODY_BYTES:
        raise ValueError(f"--max-body-bytes must be in 1..{MAX_BODY_BYTES}, got {settings.max_body_bytes}")


def _score_items(runner: ServiceRunner, items: list[Any]) -> list[dict]:
    """Score many request objects at once; bad items get error responses in their place."""
    answers: list[ScoreResponse | None] = [None] * len(items)
    pending = []
    for i, obj in enumerate(items):
        try:
            if not isinstance(obj, dict):
                raise ProtocolError("each request must be a JSON object")
            req = request_from_json(obj)
            if not isinstance(req, ScoreRequest):
                raise ProtocolError("only score requests are accepted on /v1/score", getattr(req, "id", None))
        except ProtocolError as err:
            answers[i] = error_response(err.id, err.type, str(err))
            continue
        done = threading.Event()
        pending.append(done)
        runner.submit(req, lambda resp, i=i, done=done: (answers.__setitem__(i, resp), done.set()))
    for done in pending:
        done.wait()
    return [a.to_json() for a in answers]  # type: ignore[union-attr]


def _error(code: str, message: str) -> dict:
    return error_response(None, code, message).to_json()


def make_handler(runner: ServiceRunner, settings: HttpSettings) -> type[BaseHTTPRequestHandler]:
    expected = f"Bearer {settings.token}".encode() if settings.token else None

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        timeout = settings.timeout_s  # socket timeout: idle keep-alive, stalled headers or body
        disable_nagle_algorithm = True
        wbufsize = 1 << 16  # headers and body leave in one write (flushed after each request)

        def log_message(self, fmt: str, *args: Any) -> None:  # stdout stays clean; logs to stderr
            log.debug("%s " + fmt, self.address_string(), *args)

        def handle(self) -> None:
            try:
                super().handle()
            except (ConnectionError, TimeoutError, OSError) as err:  # the client went away: one line
                log.info("client %s disconnected: %s", self.address_string(), type(err).__name__)

        def _send(self, code: int, obj: Any, close: bool = False) -> None:
            body = json.dumps(obj, ensure_ascii=True, allow_nan=False).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            if code == 401:
                self.send_header("WWW-Authenticate", 'Bearer realm="botgrpo-reward"')
            if close:
                self.close_connection = True
                self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(body)

        def _authorized(self) -> bool:
            if expected is None:
                return True
            given = (self.headers.get("Authorization") or "").strip().encode("utf-8", "replace")
            if hmac.compare_digest(given, expected):
                return True
            self._send(401, _error("unauthorized", "missing or wrong bearer token (Authorization: Bearer ...)"),
                       close=True)
            return False

        def do_GET(self) -> None:
            if not self._authorized():
                return
            if self.path == "/v1/health":
                self._send(200, {"status": "ok", "service": runner.backend.name})
            elif self.path == "/v1/info":
                self._send(200, runner.hello().to_json())
            else:
                self._send(404, _error("not_found", f"no such endpoint {self.path}"))

        def do_POST(self) -> None:
            if not self._authorized():
                return
            if self.path != "/v1/score":
                self._send(404, _error("not_found", f"no such endpoint {self.path}"), close=True)
                return
            body = self._read_body()
            if body is None:
                return
            try:
                obj = json.loads(body or b"null")
            except RecursionError:
                self._send(400, _error("bad_request", "invalid JSON: nested too deep"))
                return
            except ValueError as err:
                self._send(400, _error("bad_request", f"invalid JSON: {err}"))
                return
            if isinstance(obj, dict) and isinstance(obj.get("requests"), list):
                self._send(200, {"responses": _score_items(runner, obj["requests"])})
            else:
                self._send(200, _score_items(runner, [obj])[0])

        def _read_body(self) -> bytes | None:
            """The request body, or None after answering why it was refused (length, size)."""
            if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
                self._send(411, _error("bad_request", "send a Content-Length; chunked bodies are not accepted"),
                           close=True)
                return None
            raw = self.headers.get("Content-Length") or "0"
            length = int(raw) if raw.strip().isdigit() else -1
            if length < 0:
                self._send(400, _error("bad_request", "Content-Length must be a byte count"), close=True)
                return None
            if length > settings.max_body_bytes:
                self._send(413, _error("too_large", f"body of {length} bytes is over the {settings.max_body_bytes}"
                                                    "-byte limit (--max-body-bytes); send fewer requests per POST"),
                           close=True)
                return None
            return self.rfile.read(length)

    return Handler


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024  # listen backlog: a burst of connects is queued, not retried after 1 s
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], handler: type, max_connections: int):
        self.address_family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        self._slots = threading.BoundedSemaphore(max_connections)
        super().__init__(address, handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):  # at the cap: refuse instead of one more thread
            log.warning("refusing a connection from %s: %d connections are open", client_address[0],
                        self._slots._initial_value)  # type: ignore[attr-defined]
            self.shutdown_request(request)
            return
        super().process_request(request, client_address)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

    def handle_error(self, request: Any, client_address: Any) -> None:
        log.info("connection from %s failed: %s", client_address[0] if client_address else "?",
                 _current_error())


def _current_error() -> str:
    import sys

    err = sys.exc_info()[1]
    return f"{type(err).__name__}: {err}" if err else "unknown error"


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def bind(runner: ServiceRunner, host: str, port: int, settings: HttpSettings) -> ThreadingHTTPServer:
    """A bound server. Raises ValueError (one line) for an exposure, settings or address problem."""
    check_exposure(host, settings)
    try:
        return _Server((host, port), make_handler(runner, settings), settings.max_connections)
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
    bound_host, bound_port = server.server_address[:2]
    shown = f"[{bound_host}]" if ":" in bound_host else bound_host
    log.info("serving %s on http://%s:%d%s", runner.backend.name, shown, bound_port,
             " (bearer token required)" if settings.token else "")
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _interrupt)  # stop cleanly under process managers too
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        runner.close()
    return 0
