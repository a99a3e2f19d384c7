"""RemotePool: the RewardPool interface over reward services on other machines (`reward.url`).

Each endpoint is a service started with `botgrpo reward serve NAME --http HOST:PORT`. Requests are
spread over the endpoints (each new one goes to the endpoint with the fewest waiting or in flight),
sent in batches of one POST each from a few sender threads per endpoint, never more at once than
the endpoint's `max_inflight`. How nothing is lost:
- an endpoint that cannot be reached, resets the connection, has not given its whole answer by the
  batch's deadline plus `hang_timeout_s` (one deadline for the whole exchange: an endpoint trickling
  its answer fails like a silent one) or answers HTTP 5xx has failed: its batch goes back to the front of the queue
  and is sent to another endpoint (counted in `resent`; the failure in `endpoint_failures`), and the
  endpoint gets no new work for a back-off that doubles with each failure in a row (at most
  MAX_BACKOFF_S); after it, the next batch sent there is the probe;
- a request is tried at most `max_tries` times, then answered `service_died` with the last error:
  nothing waits forever;
- HTTP 4xx (a refused token, a body too large) cannot be fixed by sending again: the batch's
  requests are answered `error` with the endpoint's message (masked and counted by the trainer).
Deadlines are the services' own: each answers `timeout` for a request it could not score in time.
Answers are matched to requests by id (HttpRewardClient): a request an endpoint left out or answered
twice is answered `error` (`bad_response`, masked and counted), never with another request's reward;
answers for ids never sent are dropped and counted in `stray_answers`.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from botgrpo_cli.errors import UserError
from botgrpo_cli.reward_client.http import EndpointError, HttpRewardClient
from botgrpo_cli.reward_client.pool import checked_request, score_all
from botgrpo_cli.redact import public_url
from botgrpo_rewards.protocol import DEFAULT_DEADLINE_MS, Hello, ScoreRequest, ScoreResponse, error_response

log = logging.getLogger("botgrpo.reward_client")

SENDERS_PER_ENDPOINT = 4
FIRST_BACKOFF_S = 0.5
MAX_BACKOFF_S = 10.0


@dataclass
class _Job:
    request: ScoreRequest
    future: Future = field(default_factory=Future)
    tries: int = 0
    last_error: str = ""


class _Endpoint:
    def __init__(self, url: str, client: HttpRewardClient):
        self.url = public_url(url)  # as messages show it
        self.client = client
        self.queue: collections.deque[_Job] = collections.deque()
        self.inflight = 0
        self.batch_size = 16
        self.failures_in_a_row = 0
        self.down_until = 0.0

    def up(self, now: float) -> bool:
        return now >= self.down_until

    @property
    def load(self) -> int:
        return len(self.queue) + self.inflight


class RemotePool:
    """Score requests on reward services reached over HTTP (see the module docstring)."""

    def __init__(self, urls: list[str], token: str | None = None, deadline_ms: int = DEFAULT_DEADLINE_MS,
                 hang_timeout_s: float = 10.0, max_tries: int | None = None, name: str | None = None):
        if not urls:
            raise UserError("reward.url is empty: give one URL (http://HOST:PORT) or a list of them")
        self._grace_s = hang_timeout_s
        timeout = deadline_ms / 1000 + hang_timeout_s  # calls without requests of their own (the hello)
        self._endpoints = [_Endpoint(u, HttpRewardClient(u, timeout_s=timeout, token=token)) for u in urls]
        self._hello = self._greet()
        self.service = name or self._hello.service
        self._max_tries = max_tries or 2 * len(urls) + 1
        self._cond = threading.Condition()
        self._closing = False
        self._next = 0  # round-robin start among equally loaded endpoints
        self._counts = collections.Counter({k: 0 for k in ("sent", "ok", "error", "timeout", "restarts", "resent",
                                                           "endpoint_failures", "stray_answers")})
        for ep in self._endpoints:
            for i in range(SENDERS_PER_ENDPOINT):
                threading.Thread(target=self._send_loop, args=(ep,), name=f"reward-http-{i}", daemon=True).start()

    def _greet(self) -> Hello:
        """Each endpoint's hello (its batch size follows its max_inflight). A refused token, or no
        endpoint answering at all, is one error line; an endpoint down at start is tried later."""
        hello, down = None, []
        for ep in self._endpoints:
            try:
                info = ep.client.info()
            except EndpointError as err:
                if err.status in (401, 403):
                    raise UserError(f"reward service at {ep.url} refused the request (HTTP {err.status}): set "
                                    "BOTGRPO_REWARD_TOKEN to the token it was started with (--token)") from None
                down.append((ep, err))
                continue
            ep.batch_size = max(1, info.max_inflight // SENDERS_PER_ENDPOINT)
            hello = hello or info
        if hello is None:
            raise UserError(f"no reward service answered at {', '.join(e.url for e in self._endpoints)}: "
                            f"{down[0][1]}")
        for ep, err in down:
            log.warning("%s; requests go to the other endpoints until it answers", err)
            ep.down_until = time.monotonic() + FIRST_BACKOFF_S
        return hello

    # ---------------------------------------------------------------- public API

    @property
    def hello(self) -> Hello:
        return self._hello

    @property
    def stats(self) -> dict[str, int]:
        with self._cond:
            counts = dict(self._counts)
        counts["stray_answers"] = sum(ep.client.stray_answers for ep in self._endpoints)
        return counts

    def submit(self, request: ScoreRequest | dict) -> Future:
        """Queue one request; the Future resolves to its ScoreResponse (never to an exception)."""
        request, _, refusal = checked_request(request)
        job = _Job(request)
        with self._cond:
            if self._closing:
                raise RuntimeError("RemotePool is closed")
            self._counts["sent"] += 1
            if refusal is None:
                self._place_locked(job)
                return job.future
        self._finish(job, refusal)
        return job.future

    def score(self, requests: Iterable[ScoreRequest | dict],
              progress: Callable[[ScoreResponse], None] | None = None) -> list[ScoreResponse]:
        return score_all(self.submit, requests, progress)

    def close(self) -> None:
        with self._cond:
            if self._closing:
                return
            self._closing = True
            left = [j for ep in self._endpoints for j in ep.queue]
            for ep in self._endpoints:
                ep.queue.clear()
            self._cond.notify_all()
        for job in left:
            self._finish(job, error_response(job.request.id, "closed", "the reward pool was closed before this was sent"))
        for ep in self._endpoints:
            ep.client.close()

    def __enter__(self) -> "RemotePool":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ---------------------------------------------------------------- spreading

    def _place_locked(self, job: _Job, front: bool = False, avoid: _Endpoint | None = None) -> None:
        """Queue `job` on the least loaded endpoint that is up (any, when all are down: it waits out
        that one's back-off), preferring one other than `avoid` (the one that just failed it)."""
        now = time.monotonic()
        order = self._endpoints[self._next:] + self._endpoints[:self._next]
        self._next = (self._next + 1) % len(self._endpoints)
        candidates = [e for e in order if e.up(now) and e is not avoid] or [e for e in order if e is not avoid] or order
        ep = min(candidates, key=lambda e: (not e.up(now), e.down_until if not e.up(now) else 0, e.load))
        (ep.queue.appendleft if front else ep.queue.append)(job)
        self._cond.notify_all()

    def _take(self, ep: _Endpoint) -> list[_Job] | None:
        """The next batch for `ep` (waiting while it is empty or backing off); None once closing."""
        with self._cond:
            while True:
                if self._closing:
                    return None
                now = time.monotonic()
                if ep.queue and ep.up(now):
                    batch = [ep.queue.popleft() for _ in range(min(ep.batch_size, len(ep.queue)))]
                    ep.inflight += len(batch)
                    return batch
                self._cond.wait(timeout=max(0.01, ep.down_until - now) if ep.queue else None)

    # ---------------------------------------------------------------- sending

    def _send_loop(self, ep: _Endpoint) -> None:
        while True:
            batch = self._take(ep)
            if batch is None:
                return
            for job in batch:
                job.tries += 1
            try:
                answers = ep.client.score_batch([j.request for j in batch], timeout_s=self._grace_s + max(
                    j.request.deadline_ms for j in batch) / 1000)
            except EndpointError as err:
                self._failed(ep, batch, err)
                continue
            except Exception as err:  # a client bug must not strand the batch
                self._failed(ep, batch, EndpointError(f"reward service at {ep.url}: {type(err).__name__}: {err}"))
                continue
            with self._cond:
                ep.inflight -= len(batch)
                ep.failures_in_a_row = 0
                self._cond.notify_all()
            for job, resp in zip(batch, answers, strict=True):  # matched by id, one per request
                self._finish(job, resp)

    def _failed(self, ep: _Endpoint, batch: list[_Job], err: EndpointError) -> None:
        answered: list[tuple[_Job, ScoreResponse]] = []
        retryable = err.status is None or err.status >= 500
        with self._cond:
            ep.inflight -= len(batch)
            if retryable:
                self._counts["endpoint_failures"] += 1
                ep.failures_in_a_row += 1
                backoff = min(MAX_BACKOFF_S, FIRST_BACKOFF_S * 2 ** (ep.failures_in_a_row - 1))
                ep.down_until = time.monotonic() + backoff
                moved, ep.queue = list(ep.queue), collections.deque()
                for job in moved:  # waiting behind the failure: to the others, unsent so not re-sends
                    self._place_locked(job, avoid=ep)
            for job in reversed(batch):
                job.last_error = str(err)
                if not retryable:
                    answered.append((job, error_response(job.request.id, "unauthorized" if err.status in (401, 403)
                                                         else "bad_request", str(err))))
                elif self._closing:
                    answered.append((job, error_response(job.request.id, "closed", "the reward pool was closed")))
                elif job.tries >= self._max_tries:
                    answered.append((job, error_response(job.request.id, "service_died",
                                                         f"no reward endpoint scored this in {job.tries} tries; "
                                                         f"last: {err}")))
                else:
                    self._counts["resent"] += 1
                    self._place_locked(job, front=True, avoid=ep)
            self._cond.notify_all()
        if retryable and ep.failures_in_a_row == 1:  # one line per outage, not one per probe
            log.warning("%s; its requests are re-sent to another endpoint", err)
        for job, resp in answered:
            self._finish(job, resp)

    def _finish(self, job: _Job, resp: ScoreResponse) -> None:
        if job.future.done():
            return
        with self._cond:
            self._counts[resp.status] += 1
        job.future.set_result(resp)


def url_list(value: Any) -> list[str]:
    """`reward.url` as a list: one URL, several separated by commas, or a list."""
    if value is None:
        return []
    if isinstance(value, str):
        text = value.strip().strip("[]")
        return [u.strip().strip("'\"") for u in text.split(",") if u.strip()]
    if isinstance(value, (list, tuple)) and all(isinstance(u, str) for u in value):
        return [u.strip() for u in value if u.strip()]
    raise UserError(f"reward.url must be a URL (http://HOST:PORT) or a list of them, got {public_url(repr(value))}")
