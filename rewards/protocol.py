"""Reward protocol v1: the wire structs and their JSON encoding, in one module.

Services, the reward client and `botgrpo reward score` share this module and nothing else.
Transport: one JSON object per line (UTF-8) over stdin/stdout, or the same objects over HTTP.
See PROTOCOL.md beside this file for the prose version with worked examples.

Offsets are Unicode code points of the completion (Python `str` indices), half-open [start, end).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import IO, Any, Iterator, Union

VERSION = 1

# Size caps: anything larger is a bad request, answered with an error instead of being scored.
MAX_COMPLETION_CHARS = 2_000_000
MAX_PROMPT_CHARS = 2_000_000
MAX_LINE_BYTES = 16_000_000
DEFAULT_DEADLINE_MS = 10_000
MAX_DEADLINE_MS = 600_000

STATUS_OK = "ok"
STATUS_ERROR = "error"
STATUS_TIMEOUT = "timeout"
STATUSES = (STATUS_OK, STATUS_ERROR, STATUS_TIMEOUT)


class ServiceStartError(RuntimeError):
    """A reward service did not start: its backend's start() failed (service side), or no hello line
    came in time or the process exited first (client side). The message is one line saying why; the
    CLI prints it as its one-line error."""


class ProtocolError(ValueError):
    """A line that does not follow the protocol. `id` is the request id when it could be read."""

    def __init__(self, message: str, id: Any = None, type: str = "bad_request"):
        super().__init__(message)
        self.id = id
        self.type = type


# --------------------------------------------------------------------------------------------
# Structs


@dataclass
class Span:
    """A reward over characters of the completion."""

    start: int  # first code point, inclusive
    end: int  # last code point, exclusive
    reward: float  # finite, in [-1, 1]
    label: str | None = None  # short machine-readable tag, e.g. "TS2322" or "step3"

    def to_json(self) -> dict:
        d = {"start": self.start, "end": self.end, "reward": self.reward}
        if self.label is not None:
            d["label"] = self.label
        return d


@dataclass
class ErrorInfo:
    """Why a response is not ok."""

    type: str  # e.g. "bad_request", "backend", "timeout", "too_large", "service_died"
    message: str  # for people: what went wrong and, where possible, what to do

    def to_json(self) -> dict:
        return {"type": self.type, "message": self.message}


@dataclass
class ScoreRequest:
    """Ask a service to score one completion."""

    id: str  # unique among the requests in flight on one connection
    completion: str  # the model's text; offsets in the response refer to it
    prompt: str = ""
    reference: dict = field(default_factory=dict)  # task-specific: math {"answer"}, react {"spec", ...}
    options: dict = field(default_factory=dict)  # backend knobs
    deadline_ms: int = DEFAULT_DEADLINE_MS  # answer (with `timeout` at worst) within this many ms

    def to_json(self) -> dict:
        return {
            "v": VERSION,
            "op": "score",
            "id": self.id,
            "prompt": self.prompt,
            "completion": self.completion,
            "reference": self.reference,
            "options": self.options,
            "deadline_ms": self.deadline_ms,
        }


@dataclass
class ScoreResponse:
    """A service's answer to one ScoreRequest."""

    id: Any  # the request's id; None when the request's id could not be read
    status: str  # "ok" | "error" | "timeout"
    score: float | None = None  # sequence reward in [-1, 1]; None unless status is ok
    spans: list[Span] = field(default_factory=list)  # sorted, non-overlapping, code points
    metrics: dict[str, float] = field(default_factory=dict)  # numbers only, fixed names per backend
    info: dict[str, Any] = field(default_factory=dict)  # strings and numbers for people
    error: ErrorInfo | None = None  # set exactly when status is not ok

    @property
    def ok(self) -> bool:
        return self.status == STATUS_OK

    @property
    def usable(self) -> bool:
        """Status ok *and* a score: the one rule for an answer a client may train or evaluate on
        (an ok without a score is a failed row, masked and counted, never a silent 0)."""
        return self.ok and self.score is not None

    def to_json(self) -> dict:
        d: dict[str, Any] = {"v": VERSION, "id": self.id, "status": self.status}
        if self.ok:
            d["score"] = self.score
            d["spans"] = [s.to_json() for s in self.spans]
            d["metrics"] = self.metrics
        d["info"] = self.info
        if self.error is not None:
            d["error"] = self.error.to_json()
        return d


@dataclass
class Hello:
    """The first line a service writes."""

    service: str
    version: str
    capabilities: list[str] = field(default_factory=list)
    max_inflight: int = 64

    def to_json(self) -> dict:
        return {
            "v": VERSION,
            "op": "hello",
            "service": self.service,
            "version": self.version,
            "capabilities": list(self.capabilities),
            "max_inflight": self.max_inflight,
        }


@dataclass
class Ping:
    id: Any

    def to_json(self) -> dict:
        return {"v": VERSION, "op": "ping", "id": self.id}


@dataclass
class Pong:
    id: Any

    def to_json(self) -> dict:
        return {"v": VERSION, "op": "pong", "id": self.id}


@dataclass
class Shutdown:
    def to_json(self) -> dict:
        return {"v": VERSION, "op": "shutdown"}


Request = Union[ScoreRequest, Ping, Shutdown]
Message = Union[ScoreResponse, Hello, Pong]


def error_response(id: Any, type: str, message: str, status: str = STATUS_ERROR, info: dict | None = None) -> ScoreResponse:
    """A non-ok response (status error or timeout) with its reason."""
    return ScoreResponse(id=id, status=status, error=ErrorInfo(type, message), info=dict(info or {}))


# --------------------------------------------------------------------------------------------
# Encoding


def encode(msg: Any) -> str:
    """One protocol line (no trailing newline). ASCII-escaped, so lone surrogates survive."""
    return json.dumps(msg.to_json(), ensure_ascii=True, allow_nan=False, separators=(",", ":"))


def read_lines(stream: IO[bytes], limit: int | None = None) -> Iterator[bytes | None]:
    """Lines of a byte stream (split on b"\\n" only); a line over `limit` bytes (default
    MAX_LINE_BYTES) is skipped, without being held in memory, and yields None in its place."""
    limit = MAX_LINE_BYTES if limit is None else limit
    while True:
        line = stream.readline(limit + 1)
        if not line:
            return
        if len(line) > limit and not line.endswith(b"\n"):
            while True:
                rest = stream.readline(1 << 20)
                if not rest or rest.endswith(b"\n"):
                    break
            yield None
            continue
        yield line


def _loads(line: str | bytes) -> dict:
    if isinstance(line, bytes):
        if len(line) > MAX_LINE_BYTES:
            raise ProtocolError(f"line of {len(line)} bytes is over the {MAX_LINE_BYTES}-byte limit", type="too_large")
        line = line.decode("utf-8", errors="replace")
    elif len(line) > MAX_LINE_BYTES:
        raise ProtocolError(f"line of {len(line)} characters is over the {MAX_LINE_BYTES} limit", type="too_large")
    try:
        obj = json.loads(line)
    except (json.JSONDecodeError, RecursionError) as err:
        raise ProtocolError(f"invalid JSON: {err}") from None
    if not isinstance(obj, dict):
        raise ProtocolError("a protocol line must be a JSON object")
    return obj


def _readable_id(obj: dict) -> Any:
    rid = obj.get("id")
    return rid if isinstance(rid, (str, int)) and not isinstance(rid, bool) else None


def _check_version(obj: dict, rid: Any) -> None:
    v = obj.get("v", VERSION)
    if v != VERSION:
        raise ProtocolError(f"protocol version {v!r} is not supported (this side speaks v{VERSION})", rid, "version")


def _field(obj: dict, name: str, kind: type | tuple, rid: Any, default: Any = ..., what: str = "") -> Any:
    if name not in obj:
        if default is ...:
            raise ProtocolError(f"missing field '{name}'", rid)
        return default
    val = obj[name]
    if isinstance(val, bool) and kind is not bool and (kind is int or (isinstance(kind, tuple) and bool not in kind)):
        raise ProtocolError(f"field '{name}' must be {what or kind}, got a boolean", rid)
    if not isinstance(val, kind):
        raise ProtocolError(f"field '{name}' must be {what or getattr(kind, '__name__', kind)}, got {type(val).__name__}", rid)
    return val


# Option names (split at _ - .) and values a request may never send: a URL, a secret or a path the
# server reads or writes is the service's own setting (its flags or environment), or any client
# could redirect the server's credentials or write its files.
_SERVER_SETTING_WORDS = frozenset(
    "url urls uri endpoint host key apikey secret token password passwd credential credentials "
    "auth authorization cookie dir directory folder path file filename".split())
_URL_VALUE = re.compile(r"^\s*[A-Za-z][A-Za-z0-9+.-]*://")


def server_setting(options: dict, prefix: str = "") -> str | None:
    """The first option (dotted name) that names a URL, secret or server path, else None."""
    for name, value in options.items():
        dotted = f"{prefix}{name}"
        words = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", str(name)).lower()  # camelCase too
        if set(re.split(r"[_\-.\s]+", words)) & _SERVER_SETTING_WORDS:
            return dotted
        if isinstance(value, str) and _URL_VALUE.match(value):
            return dotted
        if isinstance(value, dict):
            found = server_setting(value, dotted + ".")
            if found:
                return found
    return None


def check_options(options: dict, rid: Any = None) -> None:
    """Refuse options that would let a request choose a URL, a secret or a server path."""
    name = server_setting(options)
    if name is not None:
        raise ProtocolError(
            f"option {name!r} names a URL, secret or server path; a request may not set those: they are the "
            "service's own settings (flags or environment of `botgrpo reward serve`, see the service's README)", rid)


def request_from_json(obj: dict) -> Request:
    """Validate a decoded request object (score, ping or shutdown)."""
    rid = _readable_id(obj)
    _check_version(obj, rid)
    op = obj.get("op", "score")
    if op == "ping":
        return Ping(id=obj.get("id"))
    if op == "shutdown":
        return Shutdown()
    if op != "score":
        raise ProtocolError(f"unknown op {op!r} (expected score, ping or shutdown)", rid)
    if rid is None:
        raise ProtocolError("field 'id' must be a string or an integer", None)
    completion = _field(obj, "completion", str, rid, what="a string")
    prompt = _field(obj, "prompt", str, rid, "", what="a string")
    if len(completion) > MAX_COMPLETION_CHARS:
        raise ProtocolError(f"completion of {len(completion)} characters is over the {MAX_COMPLETION_CHARS} limit", rid, "too_large")
    if len(prompt) > MAX_PROMPT_CHARS:
        raise ProtocolError(f"prompt of {len(prompt)} characters is over the {MAX_PROMPT_CHARS} limit", rid, "too_large")
    reference = _field(obj, "reference", dict, rid, {}, what="an object") or {}
    options = _field(obj, "options", dict, rid, {}, what="an object") or {}
    check_options(options, rid)
    deadline = _field(obj, "deadline_ms", (int, float), rid, DEFAULT_DEADLINE_MS, what="a number")
    if not math.isfinite(deadline) or deadline <= 0:
        raise ProtocolError("field 'deadline_ms' must be a positive number", rid)
    return ScoreRequest(
        id=rid,
        prompt=prompt,
        completion=completion,
        reference=reference,
        options=options,
        deadline_ms=int(min(deadline, MAX_DEADLINE_MS)),
    )


def decode_request(line: str | bytes) -> Request:
    """Parse one line sent to a service. Raises ProtocolError (with the id when readable)."""
    obj = _loads(line)
    try:
        return request_from_json(obj)
    except ProtocolError:
        raise
    except Exception as err:  # defensive: never let a weird line kill a service
        raise ProtocolError(f"bad request: {err}", _readable_id(obj)) from None


def _finite(x: Any, name: str, rid: Any, lo: float = -math.inf, hi: float = math.inf) -> float:
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
        raise ProtocolError(f"{name} must be a finite number, got {x!r}", rid, "bad_response")
    if not lo <= x <= hi:
        raise ProtocolError(f"{name} = {x} is outside [{lo}, {hi}]", rid, "bad_response")
    return float(x)


def validate_spans(spans: list[Span], n_chars: int | None, rid: Any = None) -> list[Span]:
    """Check spans: integer offsets within the text, non-empty, sorted, non-overlapping, reward in [-1, 1]."""
    for s in spans:
        if not isinstance(s, Span):
            raise ProtocolError(f"each span must be a Span, got {type(s).__name__}", rid, "bad_response")
        if isinstance(s.start, bool) or isinstance(s.end, bool) or not isinstance(s.start, int) or not isinstance(s.end, int):
            raise ProtocolError("span offsets must be integers", rid, "bad_response")
    out = sorted(spans, key=lambda s: (s.start, s.end))
    prev_end = 0
    for s in out:
        if s.start < 0 or s.end <= s.start or (n_chars is not None and s.end > n_chars):
            raise ProtocolError(f"span [{s.start}, {s.end}) is empty or outside the completion ({n_chars} chars)", rid, "bad_response")
        if s.start < prev_end:
            raise ProtocolError(f"span [{s.start}, {s.end}) overlaps the previous span", rid, "bad_response")
        _finite(s.reward, "span reward", rid, -1.0, 1.0)
        prev_end = s.end
    return out


def validate_score(score: Any, rid: Any = None) -> float:
    """The sequence reward as a float; ProtocolError unless it is a finite number in [-1, 1]."""
    return _finite(score, "score", rid, -1.0, 1.0)


def validate_metrics(metrics: Any, rid: Any = None) -> dict[str, float]:
    """Metrics as {name: float}; ProtocolError unless it is an object of finite numbers."""
    if not isinstance(metrics, dict):
        raise ProtocolError("metrics must be an object", rid, "bad_response")
    return {str(k): _finite(v, f"metric {k}", rid) for k, v in metrics.items()}


def clean_info(info: Any) -> dict[str, Any]:
    """Info for people: keep strings and finite numbers, turn anything else into its str()."""
    if not isinstance(info, dict):
        return {}
    out: dict[str, Any] = {}
    for k, v in info.items():
        ok = isinstance(v, str) or (isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v))
        out[str(k)] = v if ok else str(v)
    return out


def response_from_json(obj: dict, n_chars: int | None = None) -> ScoreResponse:
    """Validate a decoded score response. `n_chars` (the completion length) bounds the spans."""
    rid = obj.get("id")
    _check_version(obj, rid)
    status = obj.get("status")
    if status not in STATUSES:
        raise ProtocolError(f"status must be one of {STATUSES}, got {status!r}", rid, "bad_response")
    info = obj.get("info") or {}
    if not isinstance(info, dict):
        raise ProtocolError("info must be an object", rid, "bad_response")
    if status != STATUS_OK:
        err = obj.get("error") or {}
        if not isinstance(err, dict):
            raise ProtocolError("error must be an object", rid, "bad_response")
        return error_response(rid, str(err.get("type", status)), str(err.get("message", "")), status, info)
    score = validate_score(obj.get("score"), rid)
    raw_spans = obj.get("spans") or []
    if not isinstance(raw_spans, list):
        raise ProtocolError("spans must be a list", rid, "bad_response")
    spans = []
    for s in raw_spans:
        if not isinstance(s, dict):
            raise ProtocolError("each span must be an object", rid, "bad_response")
        label = s.get("label")
        spans.append(Span(s.get("start"), s.get("end"), s.get("reward"), None if label is None else str(label)))
    spans = validate_spans(spans, n_chars, rid)
    metrics = validate_metrics(obj.get("metrics") or {}, rid)
    return ScoreResponse(id=rid, status=STATUS_OK, score=score, spans=spans, metrics=metrics, info=clean_info(info))


def decode_message(line: str | bytes, n_chars: int | None = None) -> Message:
    """Parse one line a service wrote: hello, pong or a score response."""
    obj = _loads(line)
    op = obj.get("op")
    if op == "hello":
        _check_version(obj, None)
        return Hello(
            service=str(obj.get("service", "")),
            version=str(obj.get("version", "")),
            capabilities=[str(c) for c in obj.get("capabilities") or []],
            max_inflight=int(obj.get("max_inflight") or 64),
        )
    if op == "pong":
        return Pong(id=obj.get("id"))
    return response_from_json(obj, n_chars)
