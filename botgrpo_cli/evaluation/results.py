"""The results table of one evaluation: problems, each with its sampled completions as scored."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class Sample:
    """One completion and what the reward service(s) said about it."""

    text: str
    status: str  # ok | error | timeout (the task service's answer; non-ok counts as a failure)
    score: float | None  # the task service's sequence score; None when not ok
    success: bool  # algos.metrics.succeeded: the task's success_metric passes (docs/algorithms.md §5)
    metrics: dict[str, float] = field(default_factory=dict)  # task service metrics (+ render metrics)
    tokens: int = 0  # generated tokens, EOS included
    finished: bool = False  # ended by EOS or a stop string, not the length limit
    error: str | None = None  # why scoring failed, when it did
    screenshot: str | None = None  # PNG path relative to the eval folder (react tasks)
    render_status: str | None = None  # the render pass's status (react tasks), None without one
    render_error: str | None = None  # why the render pass failed, when it did
    turns: int = 1  # model turns (multi-turn rollouts; text is then the whole transcript)
    tool_calls: int = 0
    tool_errors: int = 0  # calls answered with an error (raised, bad call, timed out)
    multi_turn: bool = False  # sampled by multi-turn rollouts (tools, an environment, repair turns)


@dataclass
class Problem:
    """One eval prompt and its n samples."""

    id: str
    prompt: str
    samples: list[Sample]

    @property
    def n(self) -> int:
        return len(self.samples)

    @property
    def correct(self) -> int:
        return sum(s.success for s in self.samples)


def to_dict(problem: Problem) -> dict[str, Any]:
    return {"id": problem.id, "prompt": problem.prompt, "n": problem.n, "correct": problem.correct,
            "samples": [asdict(s) for s in problem.samples]}
