"""The math reward backend: final-answer correctness plus optional step checks, with spans.

Score 1.0 when the extracted final answer equals `reference.answer`, 0.0 when it does not, and
`missing_score` (default -1) when there is no answer. Spans and options are assembled in reward.py
(the reward contract, README.md). All sympy work runs in a killable worker pool (pool.py); verdicts
are cached (LRU).
"""

from __future__ import annotations

import re
import threading
import time
from typing import Any

from botgrpo_rewards.backend import Backend, BackendError, BackendTimeout, ScoreResult
from botgrpo_rewards.lru import LRU
from botgrpo_rewards.math.answer import clean_item, normalize
from botgrpo_rewards.math.extract import answer_bounds, extract_answer, gold_answer
from botgrpo_rewards.math.grounding import problem_numbers
from botgrpo_rewards.math.options import read_options
from botgrpo_rewards.math.pool import JobFailed, JobTimeout, NoWorker, WorkerDied, WorkerPool
from botgrpo_rewards.math import reward
from botgrpo_rewards.math.reward import StepReport
from botgrpo_rewards.math.steps import Equation, equations, repeated_paragraphs, split_steps
from botgrpo_rewards.protocol import CAPABILITY_DETERMINISTIC, ScoreRequest
from botgrpo_rewards.service import current_deadline, off_the_clock

MAX_ANSWER_CHARS = 2000
MAX_SIDE_CHARS = 600
# CPU seconds one check may use. Ordinary answers take milliseconds; only a pathological one
# (a huge expansion, a giant binomial) comes near this. CPU time, not wall time: see pool.py.
CHECK_LIMIT_CPU_S = 3.0
# How long a request waits for a free checker process at most (off its deadline's clock). Only a
# broken pool (its processes failing to restart) comes near it; the answer is then status error.
QUEUE_LIMIT_S = 300.0
# Requests scored at once per checker process: enough to keep each one busy while the others are
# parsed and answered, few enough that a client sending `max_inflight` never queues long for one.
REQUESTS_PER_CHECKER = 8
_INTEGER = re.compile(r"-?\d{1,1000}")


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


class MathBackend(Backend):
    """Reward backend `math` (see the module docstring)."""

    name = "math"
    version = "0.1.0"
    capabilities = ("spans", "steps", CAPABILITY_DETERMINISTIC)
    max_inflight = 2 * REQUESTS_PER_CHECKER

    def __init__(self, workers: int = 2, check_limit_s: float = CHECK_LIMIT_CPU_S, cache_size: int = 65536):
        self.max_inflight = REQUESTS_PER_CHECKER * workers
        self.check_limit_s = check_limit_s
        self.pool = WorkerPool(workers)
        self._cache = LRU(cache_size)
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
        opts = read_options(request)
        self.start()
        found = extract_answer(request.completion, opts.think_tags, opts.think_open)
        correct, reason = False, found.reason
        if found.answer is not None:
            correct, reason = self.judge(found.answer, gold_answer(gold), deadline, opts.rel_tol)
        region = answer_bounds(request.completion, opts.think_tags, opts.think_open)
        grounded = opts.grounding and bool(request.prompt.strip())  # the problem's numbers come from the prompt
        steps = self._check_steps(request.completion, region, request.prompt if grounded else None, deadline) \
            if opts.steps else StepReport()
        answer = (found.start, found.end) if found.answer is not None else None
        info: dict[str, Any] = {"answer": _clip(found.answer or ""), "gold": _clip(gold), "reason": reason}
        if steps.first_wrong is not None:
            info["first_wrong_step"] = _clip(steps.first_wrong[2])
        metrics = reward.metrics(request.completion, correct, found.answer, steps, opts.steps)
        if opts.steps and not grounded:
            info["grounding"] = "off: " + ("the request has no prompt" if opts.grounding else "option grounding is false")
        return ScoreResult(score=reward.score(correct, answer is not None, opts),
                           spans=reward.spans(request.completion, answer, correct, steps, opts, region[0]), metrics=metrics, info=info)

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
        """Run a job within check_limit_s CPU seconds and the request's deadline. The wait for a free
        checker process is off the request's clock (the deadline moves by it: a queue is not the
        request's work, and on a loaded machine it must not turn into timeouts). Running out of CPU
        seconds or of the deadline is BackendTimeout (status `timeout`: masked and counted by the
        trainer, never a wrong verdict and never cached)."""
        waited = time.monotonic()
        with off_the_clock():
            try:
                worker = self.pool.acquire(QUEUE_LIMIT_S)
            except NoWorker:
                raise BackendError(f"no checker process became free in {QUEUE_LIMIT_S:g} s; the checker pool is "
                                   "broken, see the service's stderr", "backend") from None
        deadline = current_deadline(deadline + time.monotonic() - waited)  # the fallback: called outside a runner
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            self.pool.release(worker)
            raise BackendTimeout("deadline passed before the check ran")
        try:
            return self.pool.run_on(worker, name, list(args), self.check_limit_s, remaining)
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

    def _check_steps(self, text: str, region: tuple[int, int], prompt: str | None, deadline: float) -> StepReport:
        """Step checks of the graded region only (never inside the thinking block); credit needs
        operands grounded in the prompt's numbers or earlier results (grounding.py; prompt None:
        grounding is off, by the option or for want of a prompt, and every operand counts)."""
        spans = [(region[0] + s, region[0] + e) for s, e in split_steps(text[region[0]:region[1]])]
        found = [e for e in equations(text, spans) if len(e.left) <= MAX_SIDE_CHARS and len(e.right) <= MAX_SIDE_CHARS]
        return reward.step_report(spans, found, self._equation_verdicts(found, deadline),
                                  None if prompt is None else problem_numbers(prompt), repeated_paragraphs(text, *region))

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


def _clip(text: str, limit: int = 200) -> str:
    """Info strings stay short: a 1 MB 'answer' is not logged whole."""
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} chars)"
