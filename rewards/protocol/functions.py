"""Reward function workers, the client's and the `function` service's shared transport: a user's
Python function in a child process (function_worker.py, or a fork of the caller for a
Python callable, forked.py), one JSON batch line in, one JSON answer line out (never pickle).

FunctionProcess starts the child (again after a crash or a hang) and calls it; batch_line makes
a batch; read_item reads one returned item as a response. What a batch and an answer hold is
rewards/protocol/function_worker.py's docstring. The client's FunctionPool (TRL's whole batches and its
combination of several functions) and the `function` service (one function behind protocol v1)
both run functions through here, so a function is called the same way on every path.
"""

from __future__ import annotations

import json
import math
import sys
import threading
from pathlib import Path
from typing import Any, Callable

from botgrpo_base.child import ChildExited, LineChild
from botgrpo_rewards.protocol.function_loader import SPEC_HINT, SpecError, is_file_spec, split_spec
from botgrpo_rewards.protocol.wire import DEFAULT_MEMORY_MB, ErrorInfo, ScoreResponse, Span

STARTUP_TIMEOUT_S = 120.0
NOT_SCORABLE = "not_scorable"  # the error type of a completion a function gave no score (None)
RESULT_KEYS = ("score", "spans", "metrics", "info")


def absolute_spec(spec: str) -> str:
    """The spec with a file path made absolute, so a child process started elsewhere finds it."""
    where, name = split_spec(spec)
    return f"{Path(where).expanduser().resolve()}:{name}" if is_file_spec(where) else spec


class WorkerFailed(Exception):
    """The worker died (it is started again); `type` is the error type its batch is answered with."""

    def __init__(self, message: str, type: str = "service_died"):
        super().__init__(message)
        self.type = type


class WorkerTimeout(Exception):
    """The worker did not answer in time: it was killed and started again."""


def callable_name(fn: Callable[..., Any]) -> str:
    """A callable's name as TRL gives it (`__name__`, a partial's function's, else its class's)."""
    inner = getattr(fn, "func", fn)  # functools.partial
    return getattr(inner, "__name__", None) or type(inner).__name__


def is_ready_line(line: bytes) -> bool:
    """Whether a worker's first line is its handshake (ready, or the one error line)."""
    try:
        msg = json.loads(line)
    except ValueError:
        return False
    return isinstance(msg, dict) and (msg.get("result") == "ready" or msg.get("ok") is False)


def ready_child(child: Any, what: str) -> Any:
    """`child` once its ready line came (its code imported); else it is killed and RuntimeError says
    why in one line (`what` names it: "reward function f.py:score"). Tool workers start the same way."""
    try:
        line = child.wait_ready(STARTUP_TIMEOUT_S)
    except ChildExited as err:
        raise RuntimeError(f"{what}: its process {err}") from None
    if line is None:
        child.kill()
        raise RuntimeError(f"{what} did not import within {STARTUP_TIMEOUT_S:.0f} s")
    msg = json.loads(line)
    if msg.get("ok") is False:
        child.kill()
        raise RuntimeError(str(msg.get("error")))
    return child


class FunctionProcess:
    """One reward function's worker child, started again after a crash or a hang.

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
            from botgrpo_rewards.protocol.forked import ForkedChild
            from botgrpo_rewards.protocol.function_worker import serve

            fn, name, memory_mb = self.fn, self.name, self.memory_mb
            child: Any = ForkedChild(lambda: serve(lambda: fn, name, memory_mb), name)
        else:
            child = LineChild([sys.executable, "-m", "botgrpo_rewards.protocol.function_worker", self.label, self.name,
                               str(self.memory_mb)], f"reward-function-{self.name}", ready=is_ready_line,
                              stderr="inherit")
        return ready_child(child, f"reward function {self.label}")

    def start(self) -> None:
        self._child = self._spawn()

    def close(self) -> None:
        if self._child is not None:
            self._child.kill()

    def call(self, batch: dict, timeout_s: float) -> dict:
        """The worker's answer to one batch line (function_worker.py's docstring): {"ok": True, "result",
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
                self._replace(WorkerFailed(
                    f"reward function {self.label}: its process died (exit code {child.returncode}; out of its "
                    f"memory bound of {self.memory_mb} MB?); it was started again", "service_died"))
            if reply is None:  # it hangs (or is slow): kill it, so the next batch gets a fresh one
                self._replace(WorkerTimeout(
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
            raise WorkerFailed(f"{err}; restarting it failed: {start_err}", "service_died") from None
        raise err


def batch_line(prompts: list, completions: list, references: list[dict], extras: dict | None = None) -> dict:
    """A worker's batch: TRL's columns, each reference key a list over the batch (None where a
    row lacks it), and TRL's other keywords."""
    keys = list(dict.fromkeys(k for r in references for k in r))
    return {"prompts": prompts, "completions": completions,
            "columns": {k: [r.get(k) for r in references] for k in keys}, "extras": extras or {}}


def read_item(item: Any, label: str, rid: Any = None) -> ScoreResponse | None:
    """One returned item as a response: ok with score, spans, metrics and info as given (the
    caller checks their ranges), an error (bad_result) saying why it is no result, or None when
    the function gave no score for this completion (None or NaN, TRL's "not scored")."""
    if item is None or (isinstance(item, float) and math.isnan(item)):
        return None
    if isinstance(item, float):
        return ScoreResponse(id=rid, status="ok", score=item)
    if "_bad" in item:
        return _bad(rid, f"reward function {label} {item['_bad']}")
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
        return _bad(rid, f"reward function {label} returned a dict that is not {{score, spans: [{{start, end, "
                         f"reward}}], metrics, info}}: {type(err).__name__}: {err}")
    return ScoreResponse(id=rid, status="ok", score=score, spans=spans, metrics=metrics, info=info)


def _bad(rid: Any, message: str) -> ScoreResponse:
    return ScoreResponse(id=rid, status="error", error=ErrorInfo("bad_result", message))
