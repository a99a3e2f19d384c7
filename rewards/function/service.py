"""The `function` reward backend: a user's reward function (rewards/protocol/functions.py's
FunctionProcess) behind protocol v1, for `botgrpo reward serve function` (other machines, other
trainers).

Requests are queued by the Batcher and the function is called once per batch. When it raises,
every completion of the batch is answered status error with its message; when it runs past the
earliest deadline of the batch, its worker is killed and started again and the batch is answered
status timeout; when the worker dies (a crash, its memory bound), it is started again and the
batch is answered error. Either way the next batch goes on. Here the protocol's ranges hold: a
score must lie in [-1, 1] (the trainer's own FunctionPool takes any finite score, as TRL does).
"""

from __future__ import annotations

import os
import time
from typing import Any

from botgrpo_rewards.backend import Backend, BackendError, BackendTimeout, ScoreResult
from botgrpo_rewards.protocol import Batcher, Item
from botgrpo_rewards.protocol import (
    NOT_SCORABLE,
    FunctionProcess,
    WorkerFailed,
    WorkerTimeout,
    batch_line,
    read_item,
    split_spec,
)

FUNCTION_ENV = "BOTGRPO_REWARD_FUNCTION"


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
        except WorkerTimeout as err:
            return [BackendTimeout(str(err))] * len(batch)
        except WorkerFailed as err:
            return [BackendError(str(err), err.type)] * len(batch)
        if not msg.get("ok"):
            return [BackendError(str(msg["error"]), "backend")] * len(batch)
        return [_result(read_item(item, self.spec), self.spec) for item in msg["result"]]


def _result(resp: Any, spec: str) -> ScoreResult | BackendError:
    """A read item as the runner takes it: a ScoreResult (whose ranges it checks) or the error."""
    if resp is None:
        return BackendError(f"reward function {spec} returned None for this completion (not scorable)", NOT_SCORABLE)
    if not resp.ok:
        return BackendError(resp.error.message, resp.error.type)
    return ScoreResult(score=resp.score, spans=resp.spans, metrics=resp.metrics, info=resp.info)
