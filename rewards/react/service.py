"""The react reward backend: syntax (esbuild) and types (TypeScript) of a TSX component.

Scoring rules are in README.md beside this file; the work happens in a warm Node process
(checker.js, driven by checker.py) and the verdict is computed in verdict.py.
"""

from __future__ import annotations

import time

from botgrpo_rewards.backend import Backend, BackendError, BackendTimeout, ScoreResult
from botgrpo_rewards.protocol import CAPABILITY_DETERMINISTIC, ScoreRequest
from botgrpo_rewards.react.checker import MAX_BATCH, NodeChecker
from botgrpo_rewards.react.extract import answer_code
from botgrpo_rewards.react.spec import Requirements, SpecFacts, with_spec
from botgrpo_rewards.react.verdict import ReactOptions, truncated_reasoning, verdict
from botgrpo_rewards.thinking import strip_think_options


class ReactBackend(Backend):
    """Scores a completion's first TSX block: 1.0 syntax and types pass, 0.5 syntax only, else 0."""

    name = "react"
    version = "0.1.0"
    capabilities = ("spans", CAPABILITY_DETERMINISTIC)
    # Requests handed over while Node is busy wait and then go to it together as one batch
    # (checker.MAX_BATCH): they share one TypeScript checker, which is most of a type check's cost.
    max_inflight = MAX_BATCH
    max_completion_chars = 200_000  # ~1.5 s of type checking (270k chars, loaded 2-core machine); longer is refused

    def __init__(self, heap_limit_mb: int = 768, max_old_space_mb: int = 1536, startup_timeout_s: float = 60.0,
                 checker: str | None = None):
        self._checker = NodeChecker(heap_limit_mb, max_old_space_mb, startup_timeout_s, checker)

    @property
    def checker(self) -> str:
        """The type checker the Node process runs, with its version (e.g. "tsgo 7.0.0-dev..."), once started."""
        return f"{self._checker.checker} {self._checker.checker_version or ''}".strip()

    @property
    def restarts(self) -> int:
        """How many times the Node process was replaced (timeouts, crashes, heap limit)."""
        return self._checker.restarts

    @property
    def largest_batch(self) -> int:
        """The most checks the Node process got in one batch so far."""
        return self._checker.largest_batch

    def node_cpu_seconds(self) -> float | None:
        """CPU time used by the current Node process (Linux; None elsewhere), for benchmarks."""
        return self._checker.cpu_seconds()

    def start(self) -> None:
        self._checker.start()

    def score(self, request: ScoreRequest, deadline: float) -> ScoreResult:
        options = strip_think_options(request.options)
        spec = options.pop("spec", False)  # spec.py's option; the rest are the verdict's
        if not isinstance(spec, bool):
            raise BackendError("option 'spec' must be true or false", "bad_request")
        opts = ReactOptions.parse(options)
        req = Requirements.parse((request.reference or {}).get("requirements")) if spec else None
        found_code = answer_code(request.completion, request.options)
        if found_code is None:
            result = truncated_reasoning(opts)
            return result if req is None else with_spec(result, request.completion, "", 0, req, SpecFacts(),
                                                        opts.types, opts.type_penalty)
        code, offset = found_code  # offset in the whole completion: spans never land in the reasoning
        if time.monotonic() >= deadline:
            raise BackendTimeout("deadline passed before the react check started")
        found = self._checker.check(code, opts.types, opts.max_type_errors, deadline, spec=req is not None,
                                    component=req.component if req is not None else None)
        result = verdict(request.completion, code, offset, found, opts)
        if req is None:
            return result
        facts = SpecFacts.from_node(code, found["facts"])
        return with_spec(result, request.completion, code, offset, req, facts, opts.types, opts.type_penalty)

    def spec_facts(self, code: str, deadline: float, component: str | None = None) -> SpecFacts:
        """What the spec checks read from `code`'s syntax tree, for requirements that name `component`
        (for spec.check_spec; tests, tools)."""
        return SpecFacts.from_node(code, self._checker.check(code, False, 1, deadline, spec=True,
                                                             component=component)["facts"])

    def close(self) -> None:
        self._checker.close()
