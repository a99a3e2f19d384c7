"""Several reward services scored as one: a weighted sum per completion (`reward.services`).

Each service runs in its own RewardPool, and every request goes to all of them at once, so they
score concurrently. The first service is the run's main one (the role `reward.service` has alone):
it gets the request's options (the task's, `reward.options`, a rollout line's) under its own entry's;
every other service gets only its entry's options (services refuse options they do not know). When all have answered, their responses become one ScoreResponse, which the
rest of the trainer (token rewards, masking, metrics), the evaluation and `reward score` treat like
any single service's answer:

    score   = sum_k weight_k * score_k
    spans   = every service's spans, each reward times its service's weight (the projection onto
              tokens adds overlapping spans, so rho is the weighted sum of the services' rho)
    metrics = the first service's under their own names (the task's success metric among them),
              the others' as SERVICE/NAME, and each service's score as SERVICE/score
    status  = ok only when every service's answer is usable; otherwise the first failure's status
              and error, naming the service: the completion is masked and counted, never half-scored.
              A reward function's None (error type not_scorable) is no failure: that function is left
              out of the sum, as in TRL; only a completion none of them scored is masked.

`info["services"]` maps each service to its status, so failures can be counted per service.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable

from botgrpo_cli.reward_client.pool import score_all
from botgrpo_rewards.protocol import NOT_SCORABLE
from botgrpo_rewards.protocol import ErrorInfo, ScoreRequest, ScoreResponse, Span, error_response, request_from_json


@dataclass(frozen=True)
class ServiceSpec:
    """One entry of `reward.services`."""

    name: str
    weight: float = 1.0
    options: dict = field(default_factory=dict)  # this service's request options
    workers: int | None = None  # None: reward.workers
    command: list[str] | None = None  # argv instead of the built-in service
    function: str | None = None  # a Python reward function (MODULE:NAME or FILE.py:NAME), run by service `function`
    url: list[str] | None = None  # endpoints of the service running elsewhere (`reward serve NAME --http`)


def _dropped(resp: ScoreResponse) -> bool:
    """A reward function that gave no score for this completion (None): left out, as TRL's NaN."""
    return resp.error is not None and resp.error.type == NOT_SCORABLE


def combine(rid: Any, parts: list[tuple[ServiceSpec, ScoreResponse]]) -> ScoreResponse:
    """One response from each service's answer to the same completion (the module docstring's rules)."""
    statuses = {spec.name: "ok" if _dropped(resp) else resp.status for spec, resp in parts}
    if all(_dropped(resp) for _, resp in parts):
        return error_response(rid, NOT_SCORABLE, "no reward service or function scored this completion (each "
                                                 "returned None)", info={"services": statuses})
    parts = [(spec, resp) for spec, resp in parts if not _dropped(resp)]
    failed = [(spec, resp) for spec, resp in parts if not resp.usable]
    if failed:
        spec, resp = failed[0]
        why = resp.error.message if resp.error else "answered ok without a score"
        error = ErrorInfo(resp.error.type if resp.error else "missing_score", f"reward service {spec.name!r}: {why}")
        return ScoreResponse(id=rid, status=resp.status if not resp.ok else "error", error=error,
                             info={"services": statuses})
    score, spans, metrics = 0.0, [], {}
    for k, (spec, resp) in enumerate(parts):
        score += spec.weight * float(resp.score)
        spans += [Span(s.start, s.end, spec.weight * s.reward, f"{spec.name}:{s.label}" if s.label else spec.name)
                  for s in resp.spans]
        prefix = "" if k == 0 else f"{spec.name}/"
        metrics.update({f"{prefix}{name}": v for name, v in resp.metrics.items()})
        metrics[f"{spec.name}/score"] = float(resp.score)
    spans.sort(key=lambda s: (s.start, s.end))
    return ScoreResponse(id=rid, status="ok", score=score, spans=spans, metrics=metrics, info={"services": statuses})


class CombinedPool:
    """The RewardPool interface (submit, score, stats, close) over one pool per service."""

    def __init__(self, specs: list[ServiceSpec], make_pool: Callable[[ServiceSpec], Any]):
        if not specs:
            raise ValueError("CombinedPool needs at least one service")
        names = [s.name for s in specs]
        if len(set(names)) != len(names):
            raise ValueError(f"reward services are named more than once: {names}")
        self.specs = list(specs)
        self.part_weights = {s.name: s.weight for s in specs}  # name -> weight in the combined score (GDPO reads it)
        self.service = "+".join(names)
        self.pools: list[Any] = []
        try:
            for spec in specs:  # a service that cannot start stops the others started before it
                self.pools.append(make_pool(spec))
        except BaseException:
            self.close()
            raise

    @property
    def contract_error(self) -> str | None:
        """The first reward function's answer that broke the calling contract (FunctionPool's), if any."""
        return next((e for e in (getattr(p, "contract_error", None) for p in self.pools) if e), None)

    @property
    def stats(self) -> dict[str, int]:
        """Counters summed over the services (restarts, timeouts, ...)."""
        total: dict[str, int] = {}
        for pool in self.pools:
            for k, v in pool.stats.items():
                total[k] = total.get(k, 0) + v
        return total

    def submit(self, request: ScoreRequest | dict) -> Future:
        """Send the request to every service now; the Future resolves to the combined response."""
        if isinstance(request, dict):
            request = request_from_json({"op": "score", **request})
        combined: Future = Future()
        answers: list[ScoreResponse | None] = [None] * len(self.pools)
        left, lock = [len(self.pools)], threading.Lock()

        def on_done(k: int, fut: Future) -> None:
            answers[k] = fut.result()  # a pool's future never raises (it answers per item)
            with lock:
                left[0] -= 1
                last = left[0] == 0
            if last:
                combined.set_result(combine(request.id, list(zip(self.specs, answers))))

        for k, (spec, pool) in enumerate(zip(self.specs, self.pools)):
            sub = replace(request, options={**(request.options if k == 0 else {}), **spec.options})
            pool.submit(sub).add_done_callback(lambda fut, k=k: on_done(k, fut))
        return combined

    def score(self, requests: Iterable[ScoreRequest | dict],
              progress: Callable[[ScoreResponse], None] | None = None) -> list[ScoreResponse]:
        """Score many requests; responses in input order. `progress` gets each one as it finishes."""
        return score_all(self.submit, requests, progress)

    def close(self) -> None:
        for pool in self.pools:
            pool.close()

    def __enter__(self) -> "CombinedPool":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


SPEC_KEYS = ("weight", "options", "workers", "command", "function", "url")


def parse_services(services: dict) -> list[ServiceSpec]:
    """`reward.services` -> specs, in order. Each value is a weight, or a mapping with any of
    weight (default 1), options, workers, and at most one of command, function, url. Raises
    ValueError saying what is wrong."""
    specs = []
    for name, value in services.items():
        entry = {"weight": value} if _is_number(value) else value
        if not isinstance(name, str) or not isinstance(entry, dict):
            raise ValueError(f"{name!r}: give a weight (e.g. {name}: 0.5) or a mapping of {', '.join(SPEC_KEYS)}")
        unknown = sorted(set(entry) - set(SPEC_KEYS))
        if unknown:
            raise ValueError(f"{name}: unknown key(s) {unknown}; known: {', '.join(SPEC_KEYS)}")
        weight, options = entry.get("weight", 1.0), entry.get("options", {})
        workers, command = entry.get("workers"), entry.get("command")
        if not _is_number(weight) or weight != weight or abs(weight) == float("inf"):
            raise ValueError(f"{name}.weight must be a finite number, got {weight!r}")
        if not isinstance(options, dict):
            raise ValueError(f"{name}.options must be a mapping, got {options!r}")
        if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
            raise ValueError(f"{name}.workers must be an integer >= 1, got {workers!r}")
        if command is not None and not (isinstance(command, list) and command and all(isinstance(a, str) for a in command)):
            raise ValueError(f"{name}.command must be a non-empty list of strings (an argv), got {command!r}")
        function, url = entry.get("function"), entry.get("url")
        if sum(x is not None for x in (command, function, url)) > 1:
            raise ValueError(f"{name}: give one of command, function, url (each says where the service runs)")
        if function is not None and not (callable(function) or (isinstance(function, str) and ":" in function)):
            raise ValueError(f"{name}.function must be MODULE:NAME or path/to/file.py:NAME (or a callable), "
                             f"got {function!r}")
        urls = None
        if url is not None:
            from botgrpo_cli.reward_client.remote import url_list

            try:
                urls = url_list(url)
            except Exception as err:  # UserError: its message is the reason
                raise ValueError(f"{name}.url: {err}") from None
        specs.append(ServiceSpec(name, float(weight), dict(options), workers, list(command) if command else None,
                                 function, urls))
    return specs


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def failures_by_service(responses: Iterable[ScoreResponse]) -> dict[str, int]:
    """Completions each service failed to score (from combined responses' info; {} for one service)."""
    counts: dict[str, int] = {}
    for resp in responses:
        for name, status in (resp.info.get("services") or {}).items():
            counts[name] = counts.get(name, 0) + (status != "ok")
    return counts
