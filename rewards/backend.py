"""What a reward backend implements: score one request. The service runner does everything else
(protocol I/O, validation, pipelining, deadlines, HTTP); see service.py.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from botgrpo_rewards.protocol import MAX_COMPLETION_CHARS, ScoreRequest, Span


@dataclass
class ScoreResult:
    """A backend's verdict on one completion; the runner turns it into an ok ScoreResponse."""

    score: float  # sequence reward in [-1, 1]
    spans: list[Span] = field(default_factory=list)  # code points of the completion, half-open
    metrics: dict[str, float] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)


class BackendError(Exception):
    """The backend could not score this request (not the model's fault): answered as status error."""

    def __init__(self, message: str, type: str = "backend"):
        super().__init__(message)
        self.type = type


# Request options every service reads (botgrpo_rewards/thinking.py), on top of its own.
SHARED_OPTIONS = ("think_tags", "think_open")


def check_option_names(service: str, options: dict[str, Any], known: tuple[str, ...]) -> None:
    """The one rule every service applies: a request option it does not know (a misspelling, or
    one meant for another service) is a bad request, never silently ignored."""
    allowed = set(known) | set(SHARED_OPTIONS)  # a service may list a shared option among its own: name it once
    unknown = sorted(set(options) - allowed)
    if unknown:
        raise BackendError(f"unknown {service} option(s) {', '.join(unknown)}; known: {', '.join(sorted(allowed))}",
                           "bad_request")


class BackendTimeout(Exception):
    """The backend gave up because the request's deadline passed: answered as status timeout."""


class Backend:
    """Base class of a reward backend. Subclasses set the class attributes and implement `score`.

    `score` is called from worker threads (up to `max_inflight` at once) and must be thread-safe.
    `deadline` is an absolute `time.monotonic()` value; a backend bounds its own work by it (run
    untrusted work in a killable subprocess or browser page) and raises BackendTimeout when it passes.
    """

    name: str = "base"
    version: str = "0.1.0"
    capabilities: tuple[str, ...] = ("spans",)
    max_inflight: int = 64
    # Longer completions are answered `too_large` before they are queued: a backend whose work grows
    # with the text (a type checker, a browser) sets it lower, so one huge item cannot occupy a
    # worker while normal ones wait. Real models' completions (tens of thousands of tokens) are far below.
    max_completion_chars: int = MAX_COMPLETION_CHARS

    def start(self) -> None:
        """Warm up (start helper processes, load caches). Called once before the hello line."""

    def score(self, request: ScoreRequest, deadline: float) -> ScoreResult:
        raise NotImplementedError

    def close(self) -> None:
        """Release helper processes. Called once at shutdown."""
