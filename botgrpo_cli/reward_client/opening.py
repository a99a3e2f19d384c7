"""Open the reward a run names: a built-in or plugin service, a Python function, or endpoints elsewhere.

`open_reward(reward, task_service)` is the one way the trainer, `botgrpo eval` and `bench eval` turn their
settings into a pool (`botgrpo reward score`, which reports each line's answer, calls open_pool) (RewardPool, RemotePool or CombinedPool:
all answer submit / score / stats / close the same way). The first failure of each kind (per
service and error type) is printed once, as one line: the completions are masked and counted;
the line says why.
"""

from __future__ import annotations

import sys
import threading
from concurrent.futures import Future, as_completed
from typing import Any

from botgrpo_cli.errors import UserError
from botgrpo_cli.reward_client.combined import CombinedPool, ServiceSpec, parse_services
from botgrpo_cli.reward_client.functions import FunctionPool
from botgrpo_rewards.protocol import DEFAULT_MEMORY_MB
from botgrpo_rewards.protocol import DEFAULT_DEADLINE_MS, ScoreResponse

NO_REWARD = ("this task scores with the reward you name: a Python function (reward.function=my_reward.py:NAME; "
             "`eval --function`), a running service (reward.url=http://HOST:PORT; `eval --url`), or a service by "
             "name (reward.service=NAME or reward.services; `eval --service`)")


def function_command(spec: str) -> list[str]:
    """argv of the `function` service running `spec` (it resolves a relative file path against the
    working directory it inherits: the caller's)."""
    return [sys.executable, "-m", "botgrpo_rewards", "function", "--function", spec]


def service_pool(spec: ServiceSpec, workers: int, deadline_ms: int = DEFAULT_DEADLINE_MS, env: dict | None = None,
                 memory_mb: int = DEFAULT_MEMORY_MB) -> Any:
    """One service's pool: RemotePool for endpoints, a FunctionPool for a Python function, else local
    processes (the built-in service or the spec's command)."""
    from botgrpo_cli.reward_client.pool import RewardPool
    from botgrpo_cli.reward_client.remote import RemotePool

    if spec.url:
        return RemotePool(spec.url, deadline_ms=deadline_ms)
    if spec.function is not None:
        return FunctionPool([spec.function], names=[spec.name], memory_mb=memory_mb)
    return RewardPool(spec.name, workers=spec.workers or workers, command=spec.command, env=env)


def open_pool(service: str, workers: int, command: list[str] | None, services: dict, *, function: Any = None,
              url: list[str] | None = None, deadline_ms: int = DEFAULT_DEADLINE_MS, weights: list | None = None,
              memory_mb: int = DEFAULT_MEMORY_MB, env: dict | None = None) -> Any:
    """The run's reward pool: one pool for `service` (or for the endpoints given), a FunctionPool for
    Python reward functions (`function`: one or a list, with `weights`; or `services` whose entries
    are all functions: TRL's way of combining them, see functions.py), or a CombinedPool when
    `services` (the `reward.services` mapping) names several; `workers` is then each local
    service's default; `env`, the one local service's own settings (the render service's save dir)."""
    if not services:
        if function is not None:
            functions = function if isinstance(function, list) else [function]
            return FunctionPool(functions, weights, memory_mb=memory_mb)
        return service_pool(ServiceSpec(service, command=command, url=url), workers, deadline_ms, env)
    specs = parse_services(services)
    if all(spec.function is not None for spec in specs):
        return FunctionPool([s.function for s in specs], [s.weight for s in specs], [s.name for s in specs], memory_mb)
    return CombinedPool(specs, lambda spec: service_pool(spec, workers, deadline_ms, memory_mb=memory_mb))


def require_reward(reward: Any, task_service: str | None) -> None:
    """UserError (NO_REWARD) when neither the task nor the settings name a reward: said before any
    model is loaded."""
    from botgrpo_cli.reward_client.remote import url_list

    named = reward.services or reward.service or reward.function or reward.command
    if task_service is None and not named and not url_list(reward.url):
        raise UserError(NO_REWARD)


def open_reward(reward: Any, task_service: str | None, env: dict | None = None) -> Any:
    """The pool for a RewardConfig `reward` (service, command, workers, deadline_ms, services,
    function, url, success_threshold) and the task's own service (None: the task has none, the user
    names it: then success is the reward's `success` metric when it reports one, else score above
    reward.success_threshold, which defaults to 0 for a service and to none for reward functions);
    `env`: settings of the one local service it starts (see open_pool)."""
    from botgrpo_cli.reward_client.remote import url_list

    require_reward(reward, task_service)
    urls = url_list(reward.url)
    function = reward.function
    name = reward.service or ("function" if function else task_service)
    pool = open_pool(name or ("remote" if urls else "command"), reward.workers, reward.command, reward.services,
                     function=function, url=urls or None, deadline_ms=reward.deadline_ms,
                     weights=reward.weights, memory_mb=reward.function_memory_mb, env=env)
    threshold = reward.success_threshold
    if threshold is None and not isinstance(pool, FunctionPool):
        threshold = 0.0  # a service's score lies in [-1, 1]: above 0 is its success by the protocol's convention
    # a function's success is its own `success` metric, or the threshold given, or none ("n/a"): score > 0
    # means nothing for a continuous reward such as a length penalty
    return FailureNotices(pool, SUCCESS if task_service is None and threshold is not None else None, threshold or 0.0)


SUCCESS = "success"


class FailureNotices:
    """A pool that prints the first failed answer of each kind once (see the module docstring) and,
    with `fill_success`, adds that metric (score > threshold) to usable answers that lack it;
    everything else is the wrapped pool's."""

    def __init__(self, pool: Any, fill_success: str | None = None, threshold: float = 0.0):
        self.pool = pool
        self.fill_success = fill_success
        self.threshold = threshold
        self._seen: set[tuple[str, str]] = set()
        self._lock = threading.Lock()
        self.first_failure: str | None = None  # the first failed answer's reason (a run that scored nothing names it)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.pool, name)

    def submit(self, request: Any) -> Future:
        return self._noticed(self.pool.submit(request))

    def submit_batch(self, requests: Any, extras: dict | None = None) -> list[Future]:
        """The wrapped pool's whole-batch call (FunctionPool's), with the notices of `submit`."""
        return [self._noticed(f) for f in self.pool.submit_batch(requests, extras)]

    def _noticed(self, inner: Future) -> Future:
        answer: Future = Future()

        def done(inner: Future) -> None:
            try:
                resp = inner.result()
            except Exception as err:  # pools answer per item; pass a bug on to where it is read
                answer.set_exception(err)
                return
            self._check(resp)
            answer.set_result(resp)

        inner.add_done_callback(done)
        return answer

    def score(self, requests: Any, progress: Any = None) -> list[ScoreResponse]:
        futures = [self.submit(r) for r in requests]
        if progress is not None:
            for fut in as_completed(futures):
                progress(fut.result())
        return [f.result() for f in futures]

    def _check(self, resp: ScoreResponse) -> None:
        if resp.usable:
            if self.fill_success and self.fill_success not in resp.metrics:
                resp.metrics[self.fill_success] = float(resp.score > self.threshold)
            return
        kind = resp.error.type if resp.error else resp.status
        key = (str(getattr(self.pool, "service", "")), kind)
        why = resp.error.message if resp.error else "answered ok without a score"
        with self._lock:
            self.first_failure = self.first_failure or why
            if key in self._seen:
                return
            self._seen.add(key)
        from rich.markup import escape

        from botgrpo_cli.console import console

        console.print(f"[yellow]warning:[/] reward {resp.status} ({kind}): {escape(why)} [dim](such completions are "
                      "masked and counted in reward/masked; shown once)[/]", soft_wrap=True, highlight=False)

    def close(self) -> None:
        self.pool.close()

    def __enter__(self) -> "FailureNotices":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
