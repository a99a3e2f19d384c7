"""The math reward backend: final-answer correctness plus optional step checks, with spans.

Score 1.0 when the extracted final answer equals `reference.answer`, else 0.0 (wrong or no answer).
Spans: +1 / -1 over the answer's characters (right / wrong), -1 over the last line when there is no
answer (option `penalize_missing`, default true); with option `steps: true`, -1 over the
first step holding a confidently false closed-form equality (trimmed so it never overlaps the answer).
All sympy work runs in a killable worker pool (pool.py); verdicts are cached (LRU).
"""

from __future__ import annotations

import re
import threading
import time
from collections import OrderedDict
from typing import Any

from botgrpo_rewards.backend import Backend, BackendError, BackendTimeout, ScoreResult
from botgrpo_rewards.math.answer import clean_item, normalize
from botgrpo_rewards.math.extract import Extraction, extract_answer, gold_answer
from botgrpo_rewards.math.options import read_options
from botgrpo_rewards.math.pool import JobFailed, JobTimeout, NoWorker, WorkerDied, WorkerPool
from botgrpo_rewards.math.steps import Equation, equations, split_steps
from botgrpo_rewards.protocol import ScoreRequest, Span

MAX_ANSWER_CHARS = 2000
MAX_SIDE_CHARS = 600
# CPU seconds one check may use. Ordinary answers take milliseconds; only a pathological one
# (a huge expansion, a giant binomial) comes near this. CPU time, not wall time: see pool.py.
CHECK_LIMIT_CPU_S = 3.0
_INTEGER = re.compile(r"-?\d{1,1000}")


class _LRU:
    """A thread-safe least-recently-used cache."""

    def __init__(self, size: int):
        self.size = size
        self._data: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Any) -> Any:
        with self._lock:
            if key not in self._data:
                return None
            self._data.move_to_end(key)
            return self._data[key]

    def put(self, key: Any, value: Any) -> None:
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            if len(self._data) > self.size:
                self._data.popitem(last=False)


def integer_verdict(answer: str, gold: str) -> bool | None:
    """Exact comparison when both sides are plain integers ("033", "1,000", "$204$"); else None."""
    a, g = clean_item(normalize(answer)), clean_item(normalize(gold))
    if _INTEGER.fullmatch(a) and _INTEGER.fullmatch(g):
        return int(a) == int(g)
    return None


def _gold(request: ScoreRequest) -> str:
    gold = request.reference.get("answer")
    if isinstance(gold, bool) or not isinstance(gold, (str, int, float)) or str(gold).strip() == "":
        raise BackendError("reference.answer is missing or not a string/number: send {\"answer\": \"204\"}", "bad_request")
    return str(gold)


def _last_line(text: str) -> tuple[int, int] | None:
    """Code-point span of the last non-blank line (whitespace trimmed), where a final answer belongs."""
    end = len(text.rstrip())
    if end == 0:
        return None
    start = text.rfind("\n", 0, end) + 1
    while start < end and text[start].isspace():
        start += 1
    return start, end


class MathBackend(Backend):
    """Reward backend `math` (see the module docstring)."""

    name = "math"
    version = "0.1.0"
    capabilities = ("spans", "steps")
    max_inflight = 64

    def __init__(self, workers: int = 2, check_limit_s: float = CHECK_LIMIT_CPU_S, cache_size: int = 65536):
        self.check_limit_s = check_limit_s
        self.pool = WorkerPool(workers)
        self._cache = _LRU(cache_size)
        self._started = False
        self._start_lock = threading.Lock()

    def start(self) -> None:
        with self._start_lock:
            if not self._started:
                self.pool.start()
                self._started = True

    def close(self) -> None:
        self.pool.close()

    def score(self, request: ScoreRequest, deadline: float) -> ScoreResult:
        gold = _gold(request)
        options = read_options(request)
        self.start()
        found = extract_answer(request.completion, options.think_tags, options.think_open)
        correct, reason = False, found.reason
        if found.answer is not None:
            correct, reason = self.judge(found.answer, gold_answer(gold), deadline, options.rel_tol)
        steps, wrong, first_bad = 0, 0, None
        if options.steps:
            steps, wrong, first_bad = self._check_steps(request.completion, deadline)
        missing = _last_line(request.completion) if options.penalize_missing and found.answer is None else None
        spans = _spans(found, correct, first_bad, missing)
        info: dict[str, Any] = {"answer": _clip(found.answer or ""), "gold": _clip(gold), "reason": reason}
        if first_bad is not None:
            info["first_wrong_step"] = _clip(first_bad[2])
        metrics = {"correct": float(correct), "extracted": float(found.answer is not None),
                   "steps": float(steps), "steps_wrong": float(wrong)}
        return ScoreResult(score=1.0 if correct else 0.0, spans=spans, metrics=metrics, info=info)

    def _run(self, name: str, args: tuple, deadline: float) -> Any:
        """A pool job, retried on other workers if its worker died (killed from outside: not the
        answer's fault). Still dying: status error, never a wrong verdict."""
        for _ in range(self.pool.size + 1):
            try:
                return self._run_once(name, args, deadline)
            except WorkerDied:
                continue
        raise BackendError("math checker processes keep dying; see the service's stderr", "backend")

    def _run_once(self, name: str, args: tuple, deadline: float) -> Any:
        """Run a job within check_limit_s CPU seconds and the request's deadline. Running out of
        either is BackendTimeout (status `timeout`: masked and counted by the trainer, never a wrong
        verdict and never cached), so a verdict cannot depend on how loaded the machine is."""
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise BackendTimeout("deadline passed before the check ran")
        try:
            return self.pool.run(name, list(args), self.check_limit_s, remaining)
        except NoWorker:
            raise BackendTimeout("no checker process was free before the deadline") from None
        except JobTimeout:
            if time.monotonic() >= deadline - 0.01:
                raise BackendTimeout("deadline passed while checking") from None
            raise BackendTimeout(f"check used more than {self.check_limit_s:.1f} CPU seconds") from None

    def judge(self, answer: str, gold: str, deadline: float, rel_tol: float = 0.0) -> tuple[bool, str]:
        """(correct, reason) for an extracted answer; BackendTimeout when the check ran out of time."""
        if len(answer) > MAX_ANSWER_CHARS:
            return False, f"answer longer than {MAX_ANSWER_CHARS} characters"
        quick = integer_verdict(answer, gold)
        if quick is not None:
            return quick, "integers " + ("equal" if quick else "differ")
        key = ("answer", re.sub(r"\s+", " ", answer).strip(), gold, rel_tol)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        try:
            verdict = self._run("answer", (answer, gold, rel_tol), deadline)
        except JobFailed as err:
            verdict = (False, f"check failed: {err}")
        verdict = (bool(verdict[0]), str(verdict[1]))
        self._cache.put(key, verdict)
        return verdict

    def _check_steps(self, text: str, deadline: float) -> tuple[int, int, tuple[int, int, str] | None]:
        """(number of steps, steps with a false equality, (start, end, equation) of the first)."""
        spans = split_steps(text)
        found = [e for e in equations(text, spans) if len(e.left) <= MAX_SIDE_CHARS and len(e.right) <= MAX_SIDE_CHARS]
        verdicts = self._equation_verdicts(found, deadline)
        bad_steps = sorted({e.step for e, v in zip(found, verdicts) if v is False})
        if not bad_steps:
            return len(spans), 0, None
        first = bad_steps[0]
        eq = next(e for e, v in zip(found, verdicts) if v is False and e.step == first)
        return len(spans), len(bad_steps), (spans[first][0], spans[first][1], f"{eq.left} = {eq.right}")

    def _equation_verdicts(self, found: list[Equation], deadline: float) -> list[bool | None]:
        if not found:
            return []
        items = [(e.left, e.right, e.head) for e in found]
        key = ("equations", tuple(items))
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        try:
            verdicts = self._run("equations", (items,), deadline)
        except JobFailed:
            verdicts = [None] * len(items)  # doubt: nothing penalised
        self._cache.put(key, verdicts)
        return verdicts


def _spans(found: Extraction, correct: bool, bad: tuple[int, int, str] | None,
           missing: tuple[int, int] | None = None) -> list[Span]:
    """Answer span (+1/-1), or -1 over the last line when no answer was given (`missing`), and the
    first wrong step's span (-1), never overlapping. Without the missing-answer span a wrong answer
    would be penalised where no answer is not, and a policy learns to stop answering."""
    spans: list[Span] = []
    if found.answer is not None:
        spans.append(Span(found.start, found.end, 1.0 if correct else -1.0, "answer"))
    elif missing is not None and (bad is None or missing[1] <= bad[0] or bad[1] <= missing[0]):
        spans.append(Span(missing[0], missing[1], -1.0, "no_answer"))
    if bad is not None:
        start, end = bad[0], bad[1]
        if found.answer is not None and start < found.end and found.start < end:
            start, end = (start, found.start) if start < found.start else (found.end, end)
        if start < end:
            spans.append(Span(start, end, -1.0, "step"))
    return sorted(spans, key=lambda s: s.start)


def _clip(text: str, limit: int = 200) -> str:
    """Info strings stay short: a 1 MB 'answer' is not logged whole."""
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} chars)"
