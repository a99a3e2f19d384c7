"""Python reward functions scored as TRL scores them: FunctionPool.

TRL's GRPOTrainer calls each reward function once per generation batch,
`fn(prompts=..., completions=..., completion_ids=..., trainer_state=..., log_metric=...,
log_extra=..., **columns)`, and combines the functions per completion:

    score = sum over the functions that scored it of weight_k * score_k

A function's item for a completion is a number (any finite float: the outcome's scale is free, the
group normalisation of the advantage takes it out), None or NaN (this function does not score this
completion: it is left out of the sum, as TRL's nansum leaves its NaN out, and the others still
count), or a dict {score, spans, metrics, info} (spans in the protocol's units: integer code-point
offsets, each reward in [-1, 1], times the function's weight). A completion is masked (and counted
in reward/masked) only when no function scored it, or when a function failed on it (raised, hung,
died, returned something that is not a score: TRL would stop the run there; here it costs those
completions and says why once).

Conversational data (every row's prompt a message list) passes `prompts` as those lists and
`completions` as [{"role": "assistant", "content": TEXT}], as TRL does. Metrics of each response:
NAME/score per function that scored it (reward/NAME/mean and /std per step), the first function's
own metrics under their names (its `success` is the task's success) and the others' as NAME/METRIC,
log_metric's values under their own names. log_extra's columns go into each row's info.

Each function runs in its own worker child (FunctionProcess, from the transport the client shares
with the services: rewards/protocol/functions.py), all of a batch's functions at once; a function
naming TRL's `environments` runs in this process instead (LocalFunction), where the instances are.
`submit_batch` is the trainer's call (the whole generation batch and TRL's keywords); `submit`
(evaluation, `reward score`) batches the requests that arrive together.
"""

from __future__ import annotations

import functools
import inspect
import json
import math
import threading
import time
from concurrent.futures import Future
from typing import Any, Callable, Iterable, Sequence

from botgrpo_cli.reward_client.pool import score_all
from botgrpo_cli.reward_client.verdicts import checked
from botgrpo_rewards.protocol import Batcher, Item
from botgrpo_rewards.protocol import (
    DEFAULT_MEMORY_MB,
    NOT_SCORABLE,
    FunctionProcess,
    WorkerFailed,
    WorkerTimeout,
    answer_function_batch,
    batch_line,
    callable_name,
    read_item,
)
from botgrpo_rewards.protocol import (
    STATUS_TIMEOUT,
    ScoreRequest,
    ScoreResponse,
    Span,
    error_response,
    request_from_json,
)

SUBMIT_BATCH = 64  # the most requests `submit` hands to one call


def function_name(function: Any) -> str:
    """The name TRL gives a reward function: a callable's __name__, a spec's NAME."""
    return callable_name(function) if callable(function) else str(function).rpartition(":")[2]


def unique_names(names: Sequence[str]) -> list[str]:
    """Names made unique in order: a second `f` becomes `f_2` (metric keys must not collide)."""
    seen: dict[str, int] = {}
    out = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        out.append(name if seen[name] == 1 else f"{name}_{seen[name]}")
    return out


def is_conversational(prompt: Any) -> bool:
    """TRL's test: a prompt given as a list of {role, content} messages."""
    return isinstance(prompt, list) and bool(prompt) and all(isinstance(m, dict) and "role" in m for m in prompt)


def combine(rid: Any, names: Sequence[str], weights: Sequence[float], parts: Sequence[ScoreResponse | None],
            logged_metrics: dict[str, float], extra: dict[str, Any]) -> ScoreResponse:
    """One completion's response from each function's verdict (a response, or None: no score from
    it), by the module docstring's rules."""
    statuses = {n: "ok" if p is None else p.status for n, p in zip(names, parts)}
    failed = [p for p in parts if p is not None and not p.ok]
    if failed:
        return ScoreResponse(id=rid, status=failed[0].status, error=failed[0].error, info={"services": statuses})
    if all(p is None for p in parts):
        return error_response(rid, NOT_SCORABLE, f"every reward function ({', '.join(names)}) returned None for "
                                                 "this completion", info={"services": statuses})
    score, spans, metrics, info = 0.0, [], {}, {}
    for k, (name, weight, part) in enumerate(zip(names, weights, parts)):
        if part is None:
            continue
        score += weight * part.score
        spans += [Span(s.start, s.end, weight * s.reward, f"{name}:{s.label}" if s.label else name) for s in part.spans]
        metrics.update({(m if k == 0 else f"{name}/{m}"): v for m, v in part.metrics.items()})
        metrics[f"{name}/score"] = part.score
        info.update(part.info)
    metrics.update(logged_metrics)
    info.update(extra)
    info["services"] = statuses
    spans.sort(key=lambda s: (s.start, s.end))
    return ScoreResponse(id=rid, status="ok", score=score, spans=spans, metrics=metrics, info=info)


def failure(err: WorkerFailed | WorkerTimeout) -> ScoreResponse:
    """A worker's failure as each row's verdict."""
    if isinstance(err, WorkerTimeout):  # one call per batch: the deadline bounds the whole call
        return error_response(None, "timeout", f"{err} (a call may take reward.deadline_ms)", STATUS_TIMEOUT)
    return error_response(None, err.type, str(err))


def reads_environments(function: Any) -> bool:
    """A callable naming TRL's `environments` parameter (the rollouts' environment instances)."""
    if not callable(function):
        return False
    try:
        return "environments" in inspect.signature(function).parameters
    except (TypeError, ValueError):  # a builtin or C callable
        return False


class LocalFunction:
    """A reward function that reads `environments`: the trajectories' environment instances live in
    the trainer process, so it is called here (not in a worker), on a thread of its own with the
    batch's deadline. It has no memory bound, and a call past its deadline is left running (Python
    cannot stop a thread); the batch is answered as failed, as a worker's would be."""

    restarts = 0  # nothing to restart

    def __init__(self, function: Callable[..., Any], name: str):
        self.fn, self.name, self.label = function, name, name

    def close(self) -> None:
        pass

    def call(self, batch: dict, timeout_s: float, environments: list | None = None) -> dict:
        """The answer a worker gives to `batch` (the protocol's answer_function_batch), with `environments` passed."""
        box: dict[str, dict] = {}
        fn = functools.partial(self.fn, environments=environments)
        line = json.dumps(batch, ensure_ascii=True)
        thread = threading.Thread(target=lambda: box.setdefault("reply", answer_function_batch(fn, line)), name=f"reward-{self.name}",
                                  daemon=True)
        thread.start()
        thread.join(timeout_s)
        if "reply" not in box:
            raise WorkerTimeout(f"reward function {self.label} did not return within {timeout_s:.1f} s for a batch of "
                                f"{len(batch['completions'])}")
        return box["reply"]


class FunctionPool:
    """The RewardPool interface (submit, score, stats, close) over reward functions scored as TRL
    scores them (the module docstring), plus `submit_batch` for a whole generation batch."""

    takes_batches = True  # the trainer hands it whole generation batches (submit_batch)

    def __init__(self, functions: Sequence[Any], weights: Sequence[float] | None = None,
                 names: Sequence[str] | None = None, memory_mb: int = DEFAULT_MEMORY_MB):
        if not functions:
            raise ValueError("FunctionPool needs at least one reward function")
        weights = [1.0] * len(functions) if weights is None else [float(w) for w in weights]
        if len(weights) != len(functions):
            raise ValueError(f"{len(weights)} reward weights for {len(functions)} reward functions: give one per function")
        self.names = unique_names(list(names) if names else [function_name(f) for f in functions])
        self.weights = weights
        self.part_weights = dict(zip(self.names, weights))  # name -> weight in the combined score (GDPO reads it)
        self.service = "+".join(self.names)
        self.processes: list[FunctionProcess | LocalFunction] = []
        try:
            for function, name in zip(functions, self.names):
                if reads_environments(function):
                    self.processes.append(LocalFunction(function, name))
                    continue
                process = FunctionProcess(function, name, memory_mb)
                process.start()
                self.processes.append(process)
        except RuntimeError as err:
            self.close()
            from botgrpo_cli.reward_client.worker import ServiceStartError

            raise ServiceStartError(str(err)) from None
        except BaseException:
            self.close()
            raise
        self._batcher = Batcher(self._run_items, SUBMIT_BATCH)
        self.contract_error: str | None = None  # the first answer that broke the calling contract (a bug)

    @property
    def stats(self) -> dict[str, int]:
        """restarts: worker processes started again after a crash, a hang or their memory bound;
        resent: always 0 (a failed batch is answered as failed, never sent again)."""
        return {"restarts": sum(p.restarts for p in self.processes), "resent": 0}

    # ---------------------------------------------------------------- scoring

    def score_batch(self, requests: Sequence[ScoreRequest], extras: dict | None = None) -> list[ScoreResponse]:
        """Every request scored by one call of each function (concurrently), combined per row.
        `extras`: TRL's keywords for this batch, each a list over the rows where it is per row:
        messages (each row's prompt as a message list, or None), completion_ids, trainer_state."""
        extras = dict(extras or {})
        environments = extras.pop("environments", None)  # live objects: for the functions called here only
        texts = [r.completion for r in requests]
        messages = extras.pop("messages", None)
        chat = messages is not None and len(messages) == len(requests) and all(map(is_conversational, messages))
        prompts = list(messages) if chat else [r.prompt for r in requests]
        completions = [[{"role": "assistant", "content": t}] for t in texts] if chat else texts
        line = batch_line(prompts, completions, [r.reference for r in requests], extras)
        timeout_s = max(r.deadline_ms for r in requests) / 1000
        replies: list[Any] = [None] * len(self.processes)

        def run(k: int) -> None:
            process = self.processes[k]
            try:
                replies[k] = (process.call(line, timeout_s, environments) if isinstance(process, LocalFunction)
                              else process.call(line, timeout_s))
            except (WorkerFailed, WorkerTimeout) as err:
                replies[k] = failure(err)

        threads = [threading.Thread(target=run, args=(k,), name=f"reward-{n}", daemon=True)
                   for k, n in enumerate(self.names)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        parts, logged, extra = self._verdicts(replies, texts)
        return [combine(r.id, self.names, self.weights, [p[i] for p in parts], logged, {c: v[i] for c, v in extra.items()})
                for i, r in enumerate(requests)]

    def _verdicts(self, replies: list[Any], texts: list[str]) -> tuple[list[list[Any]], dict, dict]:
        """Per function, each row's verdict; log_metric's means; log_extra's columns (one value per row)."""
        parts, logged, extra = [], {}, {}
        for process, reply in zip(self.processes, replies):
            if isinstance(reply, ScoreResponse):  # the worker died or hung
                parts.append([reply] * len(texts))
                continue
            if not reply.get("ok"):  # the function raised
                if reply.get("contract"):  # wrong count or type: every batch will repeat it
                    self.contract_error = self.contract_error or str(reply.get("error"))
                parts.append([error_response(None, "backend", str(reply.get("error")))] * len(texts))
                continue
            parts.append([checked(read_item(item, process.label), len(t), f"reward function {process.label}")
                          for item, t in zip(reply["result"], texts)])
            for name, values in (reply.get("logged") or {}).get("metrics", {}).items():
                finite = [v for v in values if math.isfinite(v)]
                if finite:
                    logged[name] = sum(finite) / len(finite)
            for column, values in (reply.get("logged") or {}).get("extra", {}).items():
                if len(values) == len(texts):  # TRL's rule too: one value per completion
                    extra[column] = values
        return parts, logged, extra

    def submit_batch(self, requests: Sequence[ScoreRequest], extras: dict | None = None) -> list[Future]:
        """score_batch in the background: one Future per request (the trainer overlaps it with compute)."""
        futures: list[Future] = [Future() for _ in requests]

        def run() -> None:
            try:
                responses = self.score_batch(requests, extras)
            except Exception as err:  # a bug here must still answer every row
                responses = [error_response(r.id, "backend", f"scoring the batch failed: {err!r}") for r in requests]
            for fut, resp in zip(futures, responses):
                fut.set_result(resp)

        threading.Thread(target=run, name="reward-functions", daemon=True).start()
        return futures

    def _run_items(self, items: list[Item]) -> list[ScoreResponse]:
        return self.score_batch([i.request for i in items])

    def submit(self, request: ScoreRequest | dict) -> Future:
        """Score one request; those submitted together are scored in one call (up to SUBMIT_BATCH)."""
        if isinstance(request, dict):
            request = request_from_json({"op": "score", **request})
        fut: Future = Future()

        def done(item: Item) -> None:
            result = item.result
            fut.set_result(result if isinstance(result, ScoreResponse)
                           else error_response(request.id, "backend", f"scoring failed: {result!r}"))

        self._batcher.enqueue(request, time.monotonic() + request.deadline_ms / 1000, done)
        return fut

    def score(self, requests: Iterable[ScoreRequest | dict],
              progress: Callable[[ScoreResponse], None] | None = None) -> list[ScoreResponse]:
        return score_all(self.submit, requests, progress)

    def close(self) -> None:
        if getattr(self, "_batcher", None) is not None:
            self._batcher.close()
        for process in self.processes:
            process.close()

    def __enter__(self) -> "FunctionPool":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
