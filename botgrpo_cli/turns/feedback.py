"""Repair turns (tasks with `revises = True`, e.g. react and react_synth, with rollout.max_turns > 1):
the task's reward service is the environment. After each attempt the service checks it; when it
fails, the service's diagnostic comes back as the next user message and the model revises. The final
attempt's score is the trajectory's score, and every attempt's spans (its rejected lines, its
passing code) carry over, moved to transcript coordinates, so each attempt's tokens get their own credit.
"""

from __future__ import annotations

from typing import Any, Callable

from botgrpo_cli.turns.environment import Transcript
from botgrpo_tasks.react_synth import REPAIR_REQUEST
from botgrpo_rewards.protocol import ScoreResponse

Score = Callable[[str, dict], ScoreResponse]  # (one attempt's text, the dataset row) -> the service's answer


def diagnostic_message(response: ScoreResponse) -> str:
    """The next user message after a failed attempt: where and why the checker rejected it."""
    info = response.info or {}
    if not response.ok:
        return f"The checker could not score that answer. {REPAIR_REQUEST}"
    where = f"line {info['line']}, column {info['column']}: " if "line" in info and "column" in info else ""
    what = info.get("message") or "it did not pass the checks"
    code = f" ({info['code']})" if info.get("code") else ""
    return f"The checker rejected it: {where}{what}{code}. {REPAIR_REQUEST}"


class ServiceFeedback:
    """One trajectory's repair loop (see the module docstring); `score` asks the task's service."""

    def __init__(self, score: Score, success_metric: str):
        self.score, self.success_metric = score, success_metric
        self.attempts: dict[int, ScoreResponse] = {}  # model turn index -> the service's answer

    def reset(self, row: dict) -> None:
        self.row = row
        return None  # the task's own prompt

    def _check(self, transcript: Transcript, turn: int) -> ScoreResponse:
        if turn not in self.attempts:
            start, end = transcript.turns[turn]
            self.attempts[turn] = self.score(transcript.text[start:end], self.row)
        return self.attempts[turn]

    def passed(self, response: ScoreResponse) -> bool:
        return response.usable and bool(response.metrics.get(self.success_metric, 0.0))

    def step(self, transcript: Transcript) -> str | None:
        response = self._check(transcript, len(transcript.turns) - 1)
        return None if self.passed(response) else diagnostic_message(response)

    def reward(self, transcript: Transcript) -> ScoreResponse:
        """The final attempt's score and metrics, with `attempts` and the first attempt's success
        (`first_attempt_<metric>`: what the repair turns added is the difference); every attempt's
        spans at its place in the transcript."""
        last = self._check(transcript, len(transcript.turns) - 1)
        if not last.usable:
            return last
        spans = []
        for turn, response in sorted(self.attempts.items()):
            start = transcript.turns[turn][0]
            if response.usable:
                spans += [(s.start + start, s.end + start, s.reward) for s in response.spans]
        first = self._check(transcript, 0)
        metrics = {**last.metrics, "attempts": float(len(transcript.turns)),
                   f"first_attempt_{self.success_metric}": float(self.passed(first))}
        return {"score": last.score, "spans": spans, "metrics": metrics}


def _submitter(pool: Any, options: dict, deadline_ms: int) -> Callable[[str, dict], Any]:
    """(attempt text, dataset row) -> the Future of the service's answer to it."""
    from botgrpo_rewards.protocol import ScoreRequest

    counter = iter(range(1 << 62))

    def submit(text: str, row: dict) -> Any:
        reference = {k: v for k, v in row.items() if k not in ("id", "prompt")}
        request = ScoreRequest(id=f"attempt-{next(counter)}", completion=text, prompt=str(row.get("prompt", "")),
                               reference=reference, options=dict(options), deadline_ms=deadline_ms)
        return pool.submit(request)

    return submit


def service_feedback(pool: Any, options: dict, deadline_ms: int, success_metric: str) -> Callable[[], ServiceFeedback]:
    """The environment factory the trainer uses: each attempt scored by `pool` (the task's service)."""
    from botgrpo_cli.reward_client.scored import response_of

    submit = _submitter(pool, options, deadline_ms)
    return lambda: ServiceFeedback(lambda text, row: response_of(submit(text, row)), success_metric)


def service_rejections(task: Any, pool: Any = None, deadline_ms: int = 30_000) -> Callable[[list[tuple[dict, str]]], list[str]]:
    """A revise corpus's rejection texts as a run shows them: each (reference row, faulty program)
    checked by the task's service (`pool`, else one started for the call) with the task's options, its
    answer made into diagnostic_message (all submitted before any is awaited: pipelined)."""
    from contextlib import nullcontext

    from botgrpo_cli.reward_client import RewardPool
    from botgrpo_cli.reward_client.scored import response_of

    def reject(items: list[tuple[dict, str]]) -> list[str]:
        with nullcontext(pool) if pool is not None else RewardPool(task.service) as running:
            submit = _submitter(running, dict(task.service_options), deadline_ms)
            futures = [submit(text, row) for row, text in items]
            return [diagnostic_message(response_of(f)) for f in futures]

    return reject
