"""A user's reward function in a child process (FunctionProcess), its items read as scores
(read_item), and the `function` reward backend serving it behind protocol v1 (FunctionBackend).

Each batch is one line to the child and one line back. When the function raises, every completion
of the batch is answered status error with its message; when it runs past the earliest deadline of
the batch, the child is killed and started again and the batch is answered status timeout; when it
dies (a crash, its memory bound), it is started again and the batch is answered error. Either way
the next batch goes on.

The trainer, `botgrpo eval` and `reward score` call functions through the client's FunctionPool
(botgrpo_cli/reward_client/functions.py), which uses FunctionProcess and read_item directly, so a
score there may be any finite number as in TRL. Behind the protocol (`reward serve function`, for
other machines) a score must lie in [-1, 1] like every service's.
"""

from __future__ import annotations

import json
import math
import os
import sys
import threading
import time
from typing import Any, Callable

from botgrpo_rewards.backend import Backend, BackendError, BackendTimeout, ScoreResult
from botgrpo_rewards.function.batcher import Batcher, Item
from botgrpo_rewards.function.loader import absolute_spec, split_spec
from botgrpo_rewards.function.worker import DEFAULT_MEMORY_MB
from botgrpo_rewards.protocol import ChildExited, LineChild, ScoreRequest, Span

FUNCTION_ENV = "BOTGRPO_REWARD_FUNCTION"
STARTUP_TIMEOUT_S = 120.0
RESULT_KEYS = ("score", "spans", "metrics", "info")
NOT_SCORABLE = "not_scorable"  # the error type of a completion a function gave no score (None)


def callable_name(fn: Callable[..., Any]) -> str:
    """A callable's name as TRL gives it (`__name__`, a partial's function's, else its class's)."""
    inner = getattr(fn, "func", fn)  # functools.partial
    return getattr(inner, "__name__", None) or type(inner).__name__


def _is_ready(line: bytes) -> bool:
    try:
        msg = json.loads(line)
    except ValueError:
        return False
    return isinstance(msg, dict) and (msg.get("result") == "ready" or msg.get("ok") is False)


class FunctionProcess:
    """One reward function's worker child (worker.py), started again after a crash or a hang.

    `function`: a spec (MODULE:NAME or path/to/file.py:NAME, imported in a fresh interpreter) or
    a Python callable (run in a fork of this process, forked.py). `memory_mb` bounds the child's
    growth (worker.bound_memory; 0 = none)."""

    def __init__(self, function: str | Callable[..., Any], name: str | None = None,
                 memory_mb: int = DEFAULT_MEMORY_MB):
        if callable(function):
            self.fn: Callable[..., Any] | None = function
            self.label = self.name = name or callable_name(function)
        else:
            self.fn = None
            self.name = name or split_spec(function)[1]
            self.label = absolute_spec(function)
        self.memory_mb = int(memory_mb)
        self.restarts = 0
        self._child: Any = None
        self._lock = threading.Lock()  # one batch at a time: the child answers lines in order

    def _spawn(self) -> Any:
        """A started child whose function imported; RuntimeError (one line: why) otherwise."""
        if self.fn is not None:
            from botgrpo_rewards.function.forked import ForkedChild

            child: Any = ForkedChild(self.fn, self.name, self.memory_mb)
        else:
            child = LineChild([sys.executable, "-m", "botgrpo_rewards.function.worker", self.label, self.name,
                               str(self.memory_mb)], f"reward-function-{self.name}", ready=_is_ready,
                              stderr="inherit")
        try:
            line = child.wait_ready(STARTUP_TIMEOUT_S)
        except ChildExited as err:
            raise RuntimeError(f"reward function {self.label}: its process {err}") from None
        if line is None:
            child.kill()
            raise RuntimeError(f"reward function {self.label} did not import within {STARTUP_TIMEOUT_S:.0f} s")
        msg = json.loads(line)
        if msg.get("ok") is False:
            child.kill()
            raise RuntimeError(str(msg.get("error")))
        return child

    def start(self) -> None:
        self._child = self._spawn()

    def close(self) -> None:
        if self._child is not None:
            self._child.kill()

    def call(self, batch: dict, timeout_s: float) -> dict:
        """The worker's answer to one batch line (worker.py's docstring): {"ok": True, "result",
        "logged"} or {"ok": False, "error"}. BackendError / BackendTimeout when the child died or
        hung (it is started again before this returns)."""
        line = json.dumps(batch, ensure_ascii=True)
        n = len(batch["completions"])
        with self._lock:
            child = self._child
            assert child is not None, "start() first"
            try:
                if not child.send(line):
                    raise ChildExited("gone")
                reply = child.receive(timeout_s)
            except ChildExited:
                self._replace(BackendError(
                    f"reward function {self.label}: its process died (exit code {child.returncode}; out of its "
                    f"memory bound of {self.memory_mb} MB?); it was started again", "service_died"))
            if reply is None:  # it hangs (or is slow): kill it, so the next batch gets a fresh one
                self._replace(BackendTimeout(
                    f"reward function {self.label} did not return within {timeout_s:.1f} s for a batch of {n}; "
                    "its process was restarted"))
        msg = json.loads(reply)
        if not msg.get("ok"):
            msg["error"] = f"reward function {self.label} raised {msg.get('error')}"
        return msg

    def _replace(self, err: Exception) -> None:
        """Kill the child, start another, raise `err` (with why the restart failed, if it did)."""
        if self._child is not None:
            self._child.kill()
        self.restarts += 1
        try:
            self._child = self._spawn()
        except RuntimeError as start_err:  # it no longer imports: every later batch says so too
            raise BackendError(f"{err}; restarting it failed: {start_err}", "service_died") from None
        raise err


def batch_line(prompts: list, completions: list, references: list[dict], extras: dict | None = None) -> dict:
    """A worker's batch: TRL's columns, each reference key a list over the batch (None where a
    row lacks it), and TRL's other keywords."""
    keys = list(dict.fromkeys(k for r in references for k in r))
    return {"prompts": prompts, "completions": completions,
            "columns": {k: [r.get(k) for r in references] for k in keys}, "extras": extras or {}}


def read_item(item: Any, label: str) -> ScoreResult | BackendError | None:
    """One returned item: a ScoreResult (ranges unchecked), None when the function gave no score
    for this completion (None or NaN, TRL's "not scored"), or why it is not a result."""
    if item is None or (isinstance(item, float) and math.isnan(item)):
        return None
    if isinstance(item, float):
        return ScoreResult(score=item)
    if "_bad" in item:
        return BackendError(f"reward function {label} {item['_bad']}", "bad_result")
    score = item.get("score")
    if score is None or (isinstance(score, float) and math.isnan(score)):
        return None
    try:
        # offsets stay as given: the protocol's check refuses any that is not an integer, on every path
        spans = [Span(s["start"], s["end"], float(s["reward"]), s.get("label")) for s in item.get("spans") or []]
        # verl's dicts put extra numbers beside the score: they are metrics too
        extra = {k: v for k, v in item.items() if k not in RESULT_KEYS}
        metrics = {k: float(v) for k, v in extra.items() if isinstance(v, (int, float))}
        metrics.update({str(k): float(v) for k, v in (item.get("metrics") or {}).items()})
        info = {k: v for k, v in extra.items() if isinstance(v, str)}
        info.update(item.get("info") or {})
        score = float(score)
    except (KeyError, TypeError, ValueError, AttributeError) as err:
        return BackendError(f"reward function {label} returned a dict that is not {{score, spans: [{{start, end, "
                            f"reward}}], metrics, info}}: {type(err).__name__}: {err}", "bad_result")
    return ScoreResult(score=score, spans=spans, metrics=metrics, info=info)


class FunctionBackend(Backend):
    """Reward backend `function`: requests queued by the Batcher, one FunctionProcess call per batch.
    Here the protocol's ranges hold (score in [-1, 1]); None answers not_scorable."""

    name = "function"
    version = "0.2.0"
    capabilities = ("spans",)  # not `deterministic`: a user's function may sample or keep state
    max_inflight = 64

    def __init__(self, function: str | None = None, batch_size: int = 64):
        spec = function or os.environ.get(FUNCTION_ENV)
        if not spec:
            raise ValueError(f"service 'function' needs the function: --function MODULE:NAME or "
                             f"path/to/file.py:NAME (or ${FUNCTION_ENV})")
        split_spec(spec)  # a malformed spec is a usage error before anything starts
        self.process = FunctionProcess(spec)
        self.spec = self.process.label
        self.batch_size = batch_size
        self._batcher: Batcher | None = None

    @property
    def restarts(self) -> int:
        return self.process.restarts

    def start(self) -> None:
        self.process.start()
        self._batcher = Batcher(self._run_batch, self.batch_size)

    def close(self) -> None:
        if self._batcher is not None:
            self._batcher.close()
        self.process.close()

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
        requests = [i.request for i in batch]
        line = batch_line([r.prompt for r in requests], [r.completion for r in requests],
                          [r.reference for r in requests])
        try:
            msg = self.process.call(line, min(i.deadline for i in batch) - time.monotonic())
        except (BackendError, BackendTimeout) as err:
            return [err] * len(batch)
        if not msg.get("ok"):
            return [BackendError(str(msg["error"]), "backend")] * len(batch)
        out: list[Any] = []
        for item in msg["result"]:
            result = read_item(item, self.spec)
            out.append(BackendError(f"reward function {self.spec} returned None for this completion (not scorable)",
                                    NOT_SCORABLE) if result is None else result)
        return out
