"""The protocol over HTTP (stdlib only): POST /v1/score, GET /v1/health, GET /v1/info."""

from __future__ import annotations

import json
import logging
import signal
import threading
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

MAX_BODY_BYTES = 4 * MAX_LINE_BYTES


def parse_address(text: str) -> tuple[str, int]:
    """'HOST:PORT' or ':PORT' or 'PORT' -> (host, port); the host defaults to 127.0.0.1."""
    host, sep, port = text.rpartition(":")
    if not sep:
        host, port = "", text
    if not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"--http wants HOST:PORT (e.g. 127.0.0.1:8765), got {text!r}")
    return host or "127.0.0.1", int(port)


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


def make_handler(runner: ServiceRunner) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt: str, *args: Any) -> None:  # stdout stays clean; logs to stderr
            log.debug("%s " + fmt, self.address_string(), *args)

        def _send(self, code: int, obj: Any) -> None:
            body = json.dumps(obj, ensure_ascii=True, allow_nan=False).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            if self.path == "/v1/health":
                self._send(200, {"status": "ok", "service": runner.backend.name})
            elif self.path == "/v1/info":
                self._send(200, runner.hello().to_json())
            else:
                self._send(404, error_response(None, "not_found", f"no such endpoint {self.path}").to_json())

        def do_POST(self) -> None:
            if self.path != "/v1/score":
                self._send(404, error_response(None, "not_found", f"no such endpoint {self.path}").to_json())
                return
            try:
                length = int(self.headers.get("Content-Length") or 0)
            except ValueError:
                length = -1
            if length < 0:
                self.close_connection = True
                self._send(400, error_response(None, "bad_request", "Content-Length must be a byte count").to_json())
                return
            if length > MAX_BODY_BYTES:
                self.close_connection = True
                self._send(413, error_response(None, "too_large", f"body over {MAX_BODY_BYTES} bytes").to_json())
                return
            try:
                body = json.loads(self.rfile.read(length) or b"null")
            except ValueError as err:
                self._send(400, error_response(None, "bad_request", f"invalid JSON: {err}").to_json())
                return
            if isinstance(body, dict) and isinstance(body.get("requests"), list):
                self._send(200, {"responses": _score_items(runner, body["requests"])})
            else:
                self._send(200, _score_items(runner, [body])[0])

    return Handler


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def serve_http(runner: ServiceRunner, host: str, port: int) -> int:
    """Serve until interrupted; logs the bound address (port 0 picks a free one) on stderr."""
    server = ThreadingHTTPServer((host, port), make_handler(runner))
    server.daemon_threads = True
    bound_host, bound_port = server.server_address[:2]
    log.info("serving %s on http://%s:%d", runner.backend.name, bound_host, bound_port)
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
