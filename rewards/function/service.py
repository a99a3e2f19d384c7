"""The `function` reward backend: runs a user's reward function (see __init__.py) in a child process.

Each batch is one line to the child and one line back. When the function raises, every completion
of the batch is answered status error with its message; when it runs past the earliest deadline of
the batch, the child is killed and started again and the batch is answered status timeout. Either
way the service goes on with the next batch.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from typing import Any

from botgrpo_rewards.backend import Backend, BackendError, BackendTimeout, ScoreResult
from botgrpo_rewards.function.batcher import Batcher, Item
from botgrpo_rewards.function.loader import absolute_spec, split_spec
from botgrpo_rewards.protocol import ChildExited, LineChild, ScoreRequest, Span

FUNCTION_ENV = "BOTGRPO_REWARD_FUNCTION"
STARTUP_TIMEOUT_S = 120.0
SUCCESS = "success"  # the metric the `prompts` task counts as solved
RESULT_KEYS = ("score", "spans", "metrics", "info")


def _is_ready(line: bytes) -> bool:
    try:
        msg = json.loads(line)
    except ValueError:
        return False
    return isinstance(msg, dict) and (msg.get("result") == "ready" or msg.get("ok") is False)


class FunctionBackend(Backend):
    """Reward backend `function` (see the module docstring)."""

    name = "function"
    version = "0.1.0"
    capabilities = ("spans",)  # not `deterministic`: a user's function may sample or keep state
    max_inflight = 64

    def __init__(self, function: str | None = None, batch_size: int = 64):
        spec = function or os.environ.get(FUNCTION_ENV)
        if not spec:
            raise ValueError(f"service 'function' needs the function: --function MODULE:NAME or "
                             f"path/to/file.py:NAME (or ${FUNCTION_ENV})")
        split_spec(spec)  # a malformed spec is a usage error before anything starts
        self.spec = absolute_spec(spec)
        self.batch_size = batch_size
        self._child: LineChild | None = None
        self._batcher: Batcher | None = None
        self._lock = threading.Lock()
        self.restarts = 0

    # ---------------------------------------------------------------- the child

    def _spawn(self) -> LineChild:
        """A started child whose function imported; RuntimeError (one line: why) otherwise."""
        child = LineChild([sys.executable, "-m", "botgrpo_rewards.function.worker", self.spec], "reward-function",
                          ready=_is_ready, stderr="inherit")
        try:
            line = child.wait_ready(STARTUP_TIMEOUT_S)
        except ChildExited as err:
            raise RuntimeError(f"reward function {self.spec}: its process {err}") from None
        if line is None:
            child.kill()
            raise RuntimeError(f"reward function {self.spec} did not import within {STARTUP_TIMEOUT_S:.0f} s")
        msg = json.loads(line)
        if msg.get("ok") is False:
            child.kill()
            raise RuntimeError(str(msg.get("error")))
        return child

    def start(self) -> None:
        self._child = self._spawn()
        self._batcher = Batcher(self._run_batch, self.batch_size)

    def close(self) -> None:
        if self._batcher is not None:
            self._batcher.close()
        if self._child is not None:
            self._child.kill()

    def _replace_child(self) -> None:
        if self._child is not None:
            self._child.kill()
        self.restarts += 1
        self._child = self._spawn()

    # ---------------------------------------------------------------- scoring

    def score(self, request: ScoreRequest, deadline: float) -> ScoreResult:
        assert self._batcher is not None, "start() first"
        item = self._batcher.submit(request, deadline)
        if not item.done.is_set():
            raise BackendTimeout("the reward function did not return before the deadline")
        if isinstance(item.result, BaseException):
            raise item.result
        return item.result

    def _run_batch(self, batch: list[Item]) -> list[Any]:
        now = time.monotonic()
        late = [i for i in batch if i.deadline <= now]
        live = [i for i in batch if i.deadline > now]
        answers = {id(i): BackendTimeout("the deadline passed before the reward function was called") for i in late}
        if live:
            answers.update(zip(map(id, live), self._call(live)))
        return [answers[id(i)] for i in batch]

    def _call(self, batch: list[Item]) -> list[Any]:
        """One call of the function on `batch`: a ScoreResult or an exception per item."""
        line = json.dumps(_batch_line([i.request for i in batch]), ensure_ascii=True)
        left = min(i.deadline for i in batch) - time.monotonic()
        child = self._child
        assert child is not None
        try:
            if not child.send(line):
                raise ChildExited("gone")
            reply = child.receive(left)
        except ChildExited:
            return self._after_failure(batch, BackendError(
                f"reward function {self.spec}: its process died (exit code {child.returncode}); it was started again",
                "service_died"))
        if reply is None:  # it hangs (or is slow): kill it, so the next batch gets a fresh one
            return self._after_failure(batch, BackendTimeout(
                f"reward function {self.spec} did not return within the deadline "
                f"({batch[0].request.deadline_ms} ms) for a batch of {len(batch)}; its process was restarted"))
        msg = json.loads(reply)
        if not msg.get("ok"):
            return [BackendError(f"reward function {self.spec} raised {msg.get('error')}", "backend")] * len(batch)
        return [_result(item, self.spec) for item in msg["result"]]

    def _after_failure(self, batch: list[Item], err: Exception) -> list[Any]:
        try:
            self._replace_child()
        except RuntimeError as start_err:  # it no longer imports: every later batch says so too
            err = BackendError(f"{err}; restarting it failed: {start_err}", "service_died")
        return [err] * len(batch)


def _batch_line(requests: list[ScoreRequest]) -> dict:
    """TRL's columns: each reference key becomes a list over the batch (None where a row lacks it)."""
    keys = list(dict.fromkeys(k for r in requests for k in r.reference))
    return {"prompts": [r.prompt for r in requests], "completions": [r.completion for r in requests],
            "columns": {k: [r.reference.get(k) for r in requests] for k in keys}}


def _result(item: Any, spec: str) -> ScoreResult | Exception:
    """One returned item as a ScoreResult (the runner checks its ranges), or why it is not one."""
    if item is None:
        return BackendError(f"reward function {spec} returned None for this completion (not scorable)",
                            "not_scorable")
    if isinstance(item, float):
        return ScoreResult(score=item, metrics={SUCCESS: float(item > 0)})
    if "_bad" in item:
        return BackendError(f"reward function {spec} {item['_bad']}", "bad_result")
    score = item.get("score")
    if score is None:
        return BackendError(f"reward function {spec} returned a dict without a score (not scorable)", "not_scorable")
    try:
        spans = [Span(int(s["start"]), int(s["end"]), float(s["reward"]), s.get("label"))
                 for s in item.get("spans") or []]
        # verl's dicts put extra numbers beside the score: they are metrics too
        extra = {k: v for k, v in item.items() if k not in RESULT_KEYS}
        metrics = {k: float(v) for k, v in extra.items() if isinstance(v, (int, float))}
        metrics.update(item.get("metrics") or {})
        info = {k: v for k, v in extra.items() if isinstance(v, str)}
        info.update(item.get("info") or {})
        score = float(score)
    except (KeyError, TypeError, ValueError) as err:
        return BackendError(f"reward function {spec} returned a dict that is not {{score, spans: [{{start, end, "
                            f"reward}}], metrics, info}}: {type(err).__name__}: {err}", "bad_result")
    metrics.setdefault(SUCCESS, float(score > 0))
    return ScoreResult(score=score, spans=spans, metrics=metrics, info=info)
