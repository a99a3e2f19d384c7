"""Protocol v1's wire structs: the messages, their size caps and statuses, and the two errors.

Import them from `botgrpo_rewards.protocol` (the one surface clients and services share).
Offsets are Unicode code points of the completion (Python `str` indices), half-open [start, end).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Union

VERSION = 1

# Size caps: anything larger is a bad request, answered with an error instead of being scored.
MAX_COMPLETION_CHARS = 2_000_000
MAX_PROMPT_CHARS = 2_000_000
MAX_LINE_BYTES = 16_000_000
DEFAULT_MEMORY_MB = 8192  # how far a reward function worker may grow past its size once the function is loaded
DEFAULT_DEADLINE_MS = 10_000
TOKEN_ENV = "BOTGRPO_REWARD_TOKEN"  # the bearer token of an HTTP service (server and clients read it)
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


# Hello capability: the service's ok verdict (score, spans, metrics) depends on the request alone,
# never on load or time, so a client may answer identical requests in flight together from one scoring.
CAPABILITY_DETERMINISTIC = "deterministic"


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

