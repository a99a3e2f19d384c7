"""Open the reward a run names: a built-in or plugin service, a Python function, or endpoints elsewhere.

`open_reward(reward, task_service)` is the one way the trainer and `botgrpo eval` turn their
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
from botgrpo_rewards.protocol import DEFAULT_DEADLINE_MS, ScoreResponse

NO_REWARD = ("this task scores with the reward you name: a Python function (reward.function=my_reward.py:NAME; "
             "`eval --function`), a running service (reward.url=http://HOST:PORT; `eval --url`), or a service by "
             "name (reward.service=NAME or reward.services; `eval --service`)")


def function_command(spec: str) -> list[str]:
    """argv of the `function` service running `spec` (it resolves a relative file path against the
    working directory it inherits: the caller's)."""
    return [sys.executable, "-m", "botgrpo_rewards", "function", "--function", spec]


def service_pool(spec: ServiceSpec, workers: int, deadline_ms: int = DEFAULT_DEADLINE_MS, env: dict | None = None) -> Any:
    """One service's pool: RemotePool for endpoints, else local processes (the built-in service,
    the `function` service running the spec's function, or the spec's command)."""
    from botgrpo_cli.reward_client.pool import RewardPool
    from botgrpo_cli.reward_client.remote import RemotePool

    if spec.url:
        return RemotePool(spec.url, deadline_ms=deadline_ms)
    command = function_command(spec.function) if spec.function else spec.command
    return RewardPool(spec.name, workers=spec.workers or workers, command=command, env=env)


def open_pool(service: str, workers: int, command: list[str] | None, services: dict, *, function: str | None = None,
              url: list[str] | None = None, deadline_ms: int = DEFAULT_DEADLINE_MS) -> Any:
    """The run's reward pool: one pool for `service` (or for the function or the endpoints given), or
    a CombinedPool when `services` (the `reward.services` mapping) names several; `workers` is then
    each local service's default."""
    if not services:
        return service_pool(ServiceSpec(service, command=command, function=function, url=url), workers, deadline_ms)
    return CombinedPool(parse_services(services), lambda spec: service_pool(spec, workers, deadline_ms))


def require_reward(reward: Any, task_service: str | None) -> None:
    """UserError (NO_REWARD) when neither the task nor the settings name a reward: said before any
    model is loaded."""
    from botgrpo_cli.reward_client.remote import url_list

    named = reward.services or reward.service or getattr(reward, "function", None) or reward.command
    if task_service is None and not named and not url_list(getattr(reward, "url", None)):
        raise UserError(NO_REWARD)


def open_reward(reward: Any, task_service: str | None) -> Any:
    """The pool for a RewardConfig-like `reward` (service, command, workers, deadline_ms, services,
    function, url) and the task's own service (None: the task has none, the user names it: then
    success is the reward's `success` metric when it reports one, else score > 0)."""
    from botgrpo_cli.reward_client.remote import url_list

    require_reward(reward, task_service)
    urls = url_list(getattr(reward, "url", None))
    function = getattr(reward, "function", None)
    name = reward.service or ("function" if function else task_service)
    pool = open_pool(name or ("remote" if urls else "command"), reward.workers, reward.command, reward.services, function=function,
                     url=urls or None, deadline_ms=reward.deadline_ms)
    return FailureNotices(pool, SUCCESS if task_service is None else None)


SUCCESS = "success"


class FailureNotices:
    """A pool that prints the first failed answer of each kind once (see the module docstring) and,
    with `fill_success`, adds that metric (score > 0) to usable answers that lack it; everything
    else is the wrapped pool's."""

    def __init__(self, pool: Any, fill_success: str | None = None):
        self.pool = pool
        self.fill_success = fill_success
        self._seen: set[tuple[str, str]] = set()
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.pool, name)

    def submit(self, request: Any) -> Future:
        answer: Future = Future()

        def done(inner: Future) -> None:
            try:
                resp = inner.result()
            except Exception as err:  # pools answer per item; pass a bug on to where it is read
                answer.set_exception(err)
                return
            self._check(resp)
            answer.set_result(resp)

        self.pool.submit(request).add_done_callback(done)
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
                resp.metrics[self.fill_success] = float(resp.score > 0)
            return
        kind = resp.error.type if resp.error else resp.status
        key = (str(getattr(self.pool, "service", "")), kind)
        with self._lock:
            if key in self._seen:
                return
            self._seen.add(key)
        from rich.markup import escape

        from botgrpo_cli.console import console

        why = resp.error.message if resp.error else "answered ok without a score"
        console.print(f"[yellow]warning:[/] reward {resp.status} ({kind}): {escape(why)} [dim](such completions are "
                      "masked and counted in reward/masked; shown once)[/]", soft_wrap=True, highlight=False)

    def close(self) -> None:
        self.pool.close()

    def __enter__(self) -> "FailureNotices":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
