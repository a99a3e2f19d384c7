"""What each HTTP request is answered, free of sockets: POST /v1/score, GET /v1/health, GET /v1/info.

The connection (http_conn.py) parses a request head into a `Head`, asks `admit` whether the
request may go on (method, bearer token, path, body length: a refusal is raised as `Refused`
before any body is read), then hands the body to `respond`, which calls `done` once with the
`Reply`: at once for GETs and bad JSON, from a scoring thread for score requests.
"""

from __future__ import annotations

import hmac
import json
import threading
from dataclasses import dataclass, field
from typing import Any, Callable

from botgrpo_rewards.protocol import ProtocolError, ScoreRequest, ScoreResponse, error_response, request_from_json
from botgrpo_rewards.service import ServiceRunner

SCORE_PATH = "/v1/score"
MAX_BATCH = 4096  # requests in one POST; the botgrpo client sends 64
METHODS = ("GET", "POST")


@dataclass
class Head:
    """A parsed request head; header names are lower-cased, values stripped."""

    method: str
    path: str
    version: str  # "HTTP/1.1" or "HTTP/1.0"
    headers: dict[str, str] = field(default_factory=dict)

    def keep_alive(self) -> bool:
        """HTTP/1.1 keeps the connection unless told to close; HTTP/1.0 only when asked to keep it."""
        tokens = {t.strip().lower() for t in self.headers.get("connection", "").split(",")}
        return "keep-alive" in tokens if self.version == "HTTP/1.0" else "close" not in tokens


@dataclass
class Reply:
    code: int
    body: Any  # JSON-encodable
    close: bool = False  # close the connection after this reply
    headers: tuple[tuple[str, str], ...] = ()


class Refused(Exception):
    """A request answered before its body is read (and the connection closed after the answer)."""

    def __init__(self, code: int, error: str, message: str, headers: tuple[tuple[str, str], ...] = ()):
        super().__init__(message)
        self.reply = Reply(code, error_body(error, message), close=True, headers=headers)


def error_body(code: str, message: str) -> dict:
    return error_response(None, code, message).to_json()


def expected_authorization(token: str | None) -> bytes | None:
    """The Authorization header value every request must carry; None when no token is set."""
    return f"Bearer {token}".encode() if token else None


def check_token(head: Head, expected: bytes | None) -> None:
    """Compared in constant time, on every endpoint."""
    if expected is None:
        return
    given = head.headers.get("authorization", "").encode("utf-8", "replace")
    if not hmac.compare_digest(given, expected):
        raise Refused(401, "unauthorized", "missing or wrong bearer token (Authorization: Bearer ...)",
                      (("WWW-Authenticate", 'Bearer realm="botgrpo-reward"'),))


def body_length(head: Head, max_body_bytes: int) -> int:
    """The body's byte count from Content-Length; a chunked, unsized or oversized body is refused."""
    if "transfer-encoding" in head.headers:
        raise Refused(411, "bad_request", "send a Content-Length; chunked bodies are not accepted")
    raw = head.headers.get("content-length", "0")
    if not (raw.isascii() and raw.isdigit()):
        raise Refused(400, "bad_request", "Content-Length must be a byte count")
    length = int(raw)
    if length > max_body_bytes:
        raise Refused(413, "too_large", f"body of {length} bytes is over the {max_body_bytes}-byte limit "
                                        "(--max-body-bytes); send fewer requests per POST")
    return length


def admit(head: Head, expected: bytes | None, max_body_bytes: int) -> int:
    """The body length to read for a request that may go on; raises Refused otherwise."""
    if head.method not in METHODS:
        raise Refused(501, "bad_request", f"method {head.method} is not supported; use GET or POST")
    check_token(head, expected)
    if head.method == "POST" and head.path != SCORE_PATH:
        raise Refused(404, "not_found", f"no such endpoint {head.path}")
    return body_length(head, max_body_bytes)


def answer_get(path: str, runner: ServiceRunner) -> Reply:
    if path == "/v1/health":
        return Reply(200, {"status": "ok", "service": runner.backend.name})
    if path == "/v1/info":
        return Reply(200, runner.hello().to_json())
    return Reply(404, error_body("not_found", f"no such endpoint {path}"))


def decode_body(body: bytes) -> Any:
    """The body's JSON value; ValueError saying why it is not JSON (nesting too deep included)."""
    try:
        return json.loads(body or b"null")
    except RecursionError:
        raise ValueError("invalid JSON: nested too deep") from None
    except ValueError as err:
        raise ValueError(f"invalid JSON: {err}") from None


def _scorable(obj: Any) -> ScoreRequest:
    if not isinstance(obj, dict):
        raise ProtocolError("each request must be a JSON object")
    req = request_from_json(obj)
    if not isinstance(req, ScoreRequest):
        raise ProtocolError("only score requests are accepted on /v1/score", getattr(req, "id", None))
    return req


class _Batch:
    """One POST's requests, fed to the runner at most `window` at a time: the runner's queue is
    first come, first served, so a POST of thousands would otherwise make every other client wait
    behind all of them. Each answer lets the next request of the batch in, behind whatever the
    other connections queued meanwhile."""

    def __init__(self, runner: ServiceRunner, items: list[Any], window: int, done: Callable[[list[dict]], None]):
        self.runner, self.items, self.window, self.done = runner, items, max(1, window), done
        self.answers: list[ScoreResponse | None] = [None] * len(items)
        self.next = self.inflight = 0
        self.left = len(items)
        self.feeding = False  # one thread submits at a time; answers arriving meanwhile are picked up by it
        self.lock = threading.Lock()

    def feed(self) -> None:
        with self.lock:
            if self.feeding:
                return
            self.feeding = True
        while True:
            with self.lock:
                if self.next >= len(self.items) or self.inflight >= self.window:
                    self.feeding = False
                    return
                i, self.next, self.inflight = self.next, self.next + 1, self.inflight + 1
            try:
                req = _scorable(self.items[i])
            except ProtocolError as err:
                self.put(i, error_response(err.id, err.type, str(err)))
                continue
            self.runner.submit(req, lambda resp, i=i: self.put(i, resp))

    def put(self, i: int, resp: ScoreResponse) -> None:
        self.answers[i] = resp
        with self.lock:
            self.inflight -= 1
            self.left -= 1
            last = self.left == 0
        if last:
            self.done([a.to_json() for a in self.answers])  # type: ignore[union-attr]
        else:
            self.feed()


def score_items(runner: ServiceRunner, items: list[Any], done: Callable[[list[dict]], None],
                window: int | None = None) -> None:
    """Submit many request objects, at most `window` (default: the runner's max_inflight) in the
    runner at once; `done(answers)` is called once, in input order, when the last is answered (on
    whichever thread answers it). Bad items get error answers in their place."""
    if not items:
        done([])
        return
    _Batch(runner, items, window or runner.max_inflight, done).feed()


def respond(head: Head, body: bytes, runner: ServiceRunner, done: Callable[[Reply], None],
            max_batch: int = MAX_BATCH) -> None:
    """Answer an admitted request: `done(reply)` is called exactly once. A POST of more than
    `max_batch` requests is answered 413, unscored."""
    if head.method == "GET":
        done(answer_get(head.path, runner))
        return
    try:
        obj = decode_body(body)
    except ValueError as err:
        done(Reply(400, error_body("bad_request", str(err))))
        return
    if isinstance(obj, dict) and isinstance(obj.get("requests"), list):
        if len(obj["requests"]) > max_batch:
            done(Reply(413, error_body("too_large", f"{len(obj['requests'])} requests in one POST is over the limit "
                                                    f"of {max_batch}; send at most {max_batch} per POST")))
            return
        score_items(runner, obj["requests"], lambda answers: done(Reply(200, {"responses": answers})))
    else:
        score_items(runner, [obj], lambda answers: done(Reply(200, answers[0])))
