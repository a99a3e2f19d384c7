"""RewardPool: N reward service processes, pipelined requests, deadlines, restarts, re-sends.

How no request is lost or stuck:
- each request sent to a worker gets an internal id unique to the pool; the caller's id is restored
  on the response, so callers may reuse ids. Answers are matched by that id: one for an id not in
  flight on that worker (never sent, or answered already) is dropped and counted (`stray_answers`);
  a request left unanswered is late, below;
- a worker is hung when a request it holds is late past its deadline plus `hang_timeout_s`, counted
  from when it was sent or from the worker's last answer, whichever is later (a service starts a
  request's clock when it takes it up, so a deep pipeline that keeps answering is not hung): it is
  killed;
- when a worker's process ends for any reason it is restarted and every request it had in flight is
  re-sent. Requests that were in flight during a crash, or late during a hang, are *suspects*: they
  are re-sent alone on an idle worker, so a second failure pins the culprit exactly. A suspect
  that fails again is answered (`timeout` when it was late, `error`/`service_died` when it crashed);
  innocent requests that merely shared its worker are re-sent and scored.

Identical requests in flight at the same time are scored once when the service's hello declares the
capability `deterministic` (its verdict depends on the request alone): a training step's groups often
hold one completion several times. Only an `ok` answer is handed to the copies waiting on it; when
the first one fails (timeout, crash, closed pool) each copy is sent on its own, so a failure is never
passed on. Nothing is kept once the answer is given: this is not a cache.
"""

from __future__ import annotations

import collections
import copy
import itertools
import json
import logging
import sys
import threading
import time
from concurrent.futures import Future, as_completed
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable

from botgrpo_cli.reward_client.worker import ServiceStartError, Worker
from botgrpo_rewards.protocol import (
    CAPABILITY_DETERMINISTIC,
    MAX_LINE_BYTES,
    STATUS_TIMEOUT,
    Hello,
    ProtocolError,
    ScoreRequest,
    ScoreResponse,
    Shutdown,
    encode,
    error_response,
    request_from_json,
    response_from_json,
)

log = logging.getLogger("botgrpo.reward_client")

MONITOR_INTERVAL_S = 0.05


@dataclass
class _Job:
    request: ScoreRequest  # as the caller gave it (its id is restored on the response)
    payload: dict  # the request's wire object; "id" is replaced per send
    future: Future = field(default_factory=Future)
    strikes: int = 0  # times it was in flight on a worker that crashed or hung because of it
    sent_at: float = 0.0
    overdue: bool = False  # missed deadline + grace on the current attempt
    key: str | None = None  # set while it leads the identical requests waiting on it (see the docstring)

    def due(self, grace_s: float, heard_at: float = 0.0) -> float:
        """When it is late: its deadline plus grace after it was sent or the worker last answered."""
        return max(self.sent_at, heard_at) + self.request.deadline_ms / 1000 + grace_s


def score_all(submit: Callable[[ScoreRequest | dict], Future], requests: Iterable[ScoreRequest | dict],
              progress: Callable[[ScoreResponse], None] | None = None) -> list[ScoreResponse]:
    """Submit every request, then wait: responses in input order; `progress` gets each as it finishes.
    The one `score` of every pool (local, remote, combined)."""
    futures = [submit(r) for r in requests]
    if progress is not None:
        for fut in as_completed(futures):
            progress(fut.result())
    return [f.result() for f in futures]


class RewardPool:
    """Score requests on `workers` processes of one reward service (see the module docstring)."""

    def __init__(
        self,
        service: str,
        workers: int = 1,
        command: list[str] | None = None,
        env: dict[str, str] | None = None,
        startup_timeout_s: float = 120.0,
        hang_timeout_s: float = 10.0,
        max_inflight: int | None = None,
        share_identical: bool = True,
    ):
        if workers < 1:
            raise ValueError("workers must be at least 1")
        self.service = service
        self._argv = list(command) if command else [sys.executable, "-m", "botgrpo_rewards", service]
        self._env = env
        self._startup_timeout_s = startup_timeout_s
        self._grace_s = hang_timeout_s
        self._cap = max_inflight
        self._cond = threading.Condition()
        self._queue: collections.deque[_Job] = collections.deque()
        self._suspects: collections.deque[_Job] = collections.deque()
        self._workers: list[Worker | None] = [None] * workers
        self._starting = 0
        self._ids = itertools.count()
        self._counts = collections.Counter({k: 0 for k in ("sent", "ok", "error", "timeout", "restarts", "resent",
                                                           "shared", "stray_answers")})
        self._closing = False
        self._leaders: dict[str, list[_Job]] = {}  # request key -> identical requests waiting on it
        self._start_all(workers)
        hello = self.hello
        self._share = share_identical and hello is not None and CAPABILITY_DETERMINISTIC in hello.capabilities
        threading.Thread(target=self._monitor, name=f"reward-{service}-monitor", daemon=True).start()

    # ---------------------------------------------------------------- public API

    @property
    def stats(self) -> dict[str, int]:
        with self._cond:
            return dict(self._counts)

    @property
    def pids(self) -> list[int | None]:
        """Process id of each worker slot (None while one restarts)."""
        with self._cond:
            return [w.pid if w else None for w in self._workers]

    @property
    def hello(self) -> Hello | None:
        """The service's hello line (from any live worker)."""
        with self._cond:
            return next((w.hello for w in self._workers if w), None)

    def submit(self, request: ScoreRequest | dict) -> Future:
        """Queue one request; the Future resolves to its ScoreResponse (never to an exception)."""
        job = self._make_job(request)
        with self._cond:
            if self._closing:
                raise RuntimeError("RewardPool is closed")
            self._counts["sent"] += 1
            if job.future.done():
                self._counts[job.future.result().status] += 1
                return job.future
        self._enqueue(job)
        return job.future

    def score(self, requests: Iterable[ScoreRequest | dict], progress: Callable[[ScoreResponse], None] | None = None) -> list[ScoreResponse]:
        """Score many requests; responses in input order. `progress` gets each one as it finishes."""
        return score_all(self.submit, requests, progress)

    def close(self, timeout_s: float = 10.0) -> None:
        """Answer unsent requests `closed`, ask each service to shut down, wait, then kill."""
        with self._cond:
            if self._closing:
                return
            self._closing = True
            dropped = list(self._queue) + list(self._suspects)
            self._queue.clear()
            self._suspects.clear()
            workers = [w for w in self._workers if w]
            self._cond.notify_all()
        for job in dropped:
            self._finish(job, error_response(job.request.id, "closed", "the reward pool was closed before this was sent"))
        for w in workers:
            w.send(encode(Shutdown()))
            w.close_stdin()
        end = time.monotonic() + timeout_s
        for w in workers:
            w.stop(end - time.monotonic())
        with self._cond:  # each reader has handed over its last lines once its exit handler ran
            self._cond.wait_for(lambda: not any(self._workers), timeout=max(1.0, end - time.monotonic()))

    def __enter__(self) -> "RewardPool":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ---------------------------------------------------------------- starting workers

    def _spawn(self, slot: int, generation: int) -> Worker:
        return Worker(self.service, self._argv, self._env, slot, generation, self._on_line, self._on_exit)

    def _start_all(self, n: int) -> None:
        started: list[Worker] = []
        try:
            for i in range(n):  # start them all first: they warm up in parallel
                started.append(self._spawn(i, 0))
            for w in started:
                w.wait_hello(self._startup_timeout_s)
        except (ServiceStartError, OSError) as err:
            for w in started:
                w.kill()
            if isinstance(err, OSError):
                raise ServiceStartError(f"could not run reward service {self.service!r} ({' '.join(self._argv)}): {err}") from None
            raise
        for w in started:
            self._register(w)

    def _register(self, w: Worker) -> None:
        with self._cond:
            if self._closing:
                w.kill()
                return
            self._workers[w.slot] = w
            dead = w.exited  # it died before it was registered: its exit handler skipped it
            sends = self._dispatch_locked()
        self._send_all(sends)
        if dead:
            self._on_exit(w)

    def _restart(self, slot: int, generation: int) -> None:
        try:
            w = self._spawn(slot, generation)
            w.wait_hello(self._startup_timeout_s)
        except (ServiceStartError, OSError) as err:
            log.error("reward service %s (slot %d) did not restart: %s", self.service, slot, err)
            with self._cond:
                self._starting -= 1
                stranded = self._stranded_locked(f"the reward service died and could not restart: {err}")
            for job, resp in stranded:
                self._finish(job, resp)
            return
        with self._cond:
            self._starting -= 1
        self._register(w)

    def _stranded_locked(self, message: str) -> list[tuple[_Job, ScoreResponse]]:
        """When no worker is alive or starting, queued requests can never be sent: answer them."""
        if self._starting or any(self._workers):
            return []
        jobs = list(self._queue) + list(self._suspects)
        self._queue.clear()
        self._suspects.clear()
        return [(j, error_response(j.request.id, "service_died", message)) for j in jobs]

    # ---------------------------------------------------------------- sending

    def _enqueue(self, job: _Job) -> None:
        """Queue `job`, or let it wait on an identical request already in flight (deterministic services)."""
        key = _request_key(job.payload) if self._share else None  # serialised outside the lock
        with self._cond:
            if self._closing:
                closed = error_response(job.request.id, "closed", "the reward pool was closed before this was sent")
            else:
                closed = None
                if key is not None and key in self._leaders:
                    self._leaders[key].append(job)
                    self._counts["shared"] += 1
                    return
                if key is not None:
                    job.key, self._leaders[key] = key, []
                self._queue.append(job)
                sends = self._dispatch_locked()
                stranded = self._stranded_locked(f"no process of reward service {self.service!r} is running (restarts failed)")
        if closed is not None:
            self._finish(job, closed)
            return
        self._send_all(sends)
        for stuck, resp in stranded:
            self._finish(stuck, resp)

    def _make_job(self, request: ScoreRequest | dict) -> _Job:
        request, payload, refusal = checked_request(request)
        job = _Job(request, payload)
        if refusal is not None:
            job.future.set_result(refusal)
        return job

    def _pick_locked(self, alone: bool) -> Worker | None:
        best = None
        for w in self._workers:
            if w is None or w.hello is None or w.hung or w.exited or w.isolated:
                continue
            cap = min(w.hello.max_inflight, self._cap or w.hello.max_inflight)
            if (alone and w.inflight) or len(w.inflight) >= cap:
                continue
            if best is None or len(w.inflight) < len(best.inflight):
                best = w
        return best

    def _dispatch_locked(self) -> list[tuple[Worker, str]]:
        """Assign queued requests to workers with room; the caller writes the lines after unlocking."""
        sends = []
        while self._suspects:  # suspects run alone, and before anything new
            w = self._pick_locked(alone=True)
            if w is None:
                return sends
            w.isolated = True
            sends.append(self._assign_locked(self._suspects.popleft(), w))
        while self._queue:
            w = self._pick_locked(alone=False)
            if w is None:
                break
            sends.append(self._assign_locked(self._queue.popleft(), w))
        return sends

    def _assign_locked(self, job: _Job, w: Worker) -> tuple[Worker, str]:
        key = f"{w.slot}.{w.generation}.{next(self._ids)}"
        w.inflight[key] = job
        job.sent_at, job.overdue = time.monotonic(), False
        wire = dict(job.payload, id=key)
        return w, json.dumps(wire, ensure_ascii=True, allow_nan=False, separators=(",", ":"))

    @staticmethod
    def _send_all(sends: list[tuple[Worker, str]]) -> None:
        for w, line in sends:
            w.send(line)  # a failed write means the process is gone; its exit handler re-sends

    # ---------------------------------------------------------------- receiving

    def _on_line(self, w: Worker, line: bytes) -> None:
        try:
            obj = json.loads(line)
        except ValueError:
            log.warning("reward service %s wrote a line that is not JSON: %.200r", self.service, line)
            return
        if not isinstance(obj, dict) or obj.get("op") == "pong":
            return
        with self._cond:
            job = w.inflight.pop(obj.get("id"), None) if isinstance(obj.get("id"), str) else None
            if job is None:
                self._counts["stray_answers"] += 1
                if self._counts["stray_answers"] == 1:  # one line; the rest are counted
                    log.warning("reward service %s answered an id it was not asked about (dropped): %.200r",
                                self.service, line)
                return
            w.answered_at = time.monotonic()
            if not w.inflight:
                w.isolated = False
            sends = self._dispatch_locked()
        self._send_all(sends)
        try:
            resp = response_from_json(obj, len(job.request.completion))
        except ProtocolError as err:
            resp = error_response(job.request.id, "bad_response", f"reward service {self.service!r} broke the protocol: {err}")
        resp.id = job.request.id
        self._finish(job, resp)

    def _on_exit(self, w: Worker) -> None:
        answered: list[tuple[_Job, ScoreResponse]] = []
        with self._cond:
            if self._workers[w.slot] is not w:
                return
            self._workers[w.slot] = None
            self._cond.notify_all()
            jobs = list(w.inflight.values())
            w.inflight.clear()
            if self._closing:
                answered = [(j, error_response(j.request.id, "closed", "the reward pool was closed")) for j in jobs]
            else:
                answered = self._triage_locked(w, jobs)
                self._counts["restarts"] += 1
                self._starting += 1
                threading.Thread(target=self._restart, args=(w.slot, w.generation + 1), daemon=True).start()
            sends = self._dispatch_locked()
        self._send_all(sends)
        if not self._closing:
            log.warning("reward service %s (pid %d) %s; restarting it", self.service, w.pid, "hung" if w.hung else "died")
        for job, resp in answered:
            self._finish(job, resp)

    def _triage_locked(self, w: Worker, jobs: list[_Job]) -> list[tuple[_Job, ScoreResponse]]:
        """Re-queue a dead worker's requests; answer suspects that failed a second time."""
        answered = []
        for job in jobs:
            if w.hung and not job.overdue:
                self._queue.appendleft(job)  # innocent bystander of a hang
            elif job.strikes >= 1:
                answered.append((job, self._give_up(job, w)))
                continue
            else:
                job.strikes += 1
                self._suspects.append(job)
            self._counts["resent"] += 1
        return answered

    def _give_up(self, job: _Job, w: Worker) -> ScoreResponse:
        rid = job.request.id
        if job.overdue:
            return error_response(rid, "timeout", f"no answer within deadline_ms={job.request.deadline_ms} (+{self._grace_s:g} s) on two tries; the service hung", STATUS_TIMEOUT)
        tail = w.stderr_tail().strip().splitlines()[-3:]
        return error_response(rid, "service_died", f"reward service {self.service!r} died twice while scoring this request. " + " | ".join(tail))

    def _finish(self, job: _Job, resp: ScoreResponse) -> None:
        if job.future.done():
            return
        with self._cond:
            self._counts[resp.status] += 1
            followers = self._leaders.pop(job.key, []) if job.key is not None else []
            job.key = None
        job.future.set_result(resp)
        for f in followers:  # identical requests: the same verdict when it is ok, else their own try
            if resp.status == "ok":
                self._finish(f, replace(copy.deepcopy(resp), id=f.request.id))
            else:
                self._enqueue(f)

    # ---------------------------------------------------------------- hang detection

    def _monitor(self) -> None:
        while True:
            with self._cond:
                if self._cond.wait_for(lambda: self._closing, timeout=MONITOR_INTERVAL_S):
                    return
                now = time.monotonic()
                hung = []
                for w in self._workers:
                    if w is None or w.hung:
                        continue
                    if not any(now > j.due(self._grace_s, w.answered_at) for j in w.inflight.values()):
                        continue
                    # silent too long: the requests late by their own send time are the suspects,
                    # the rest only queued behind them and are re-sent as bystanders
                    for j in w.inflight.values():
                        j.overdue = now > j.due(self._grace_s)
                    w.hung = True
                    hung.append(w)
            for w in hung:
                w.kill()  # its reader sees EOF and _on_exit re-sends or answers what it had


def checked_request(request: ScoreRequest | dict) -> tuple[ScoreRequest, dict, ScoreResponse | None]:
    """(request, its wire object, None), or with the error response that answers it unsent when it
    is not a valid request or too large for one line: every client refuses the same things."""
    if isinstance(request, dict):
        try:
            parsed = request_from_json({"op": "score", **request})
        except ProtocolError as err:
            return ScoreRequest(id=err.id, completion=""), {}, error_response(err.id, err.type, str(err))
        request = parsed  # type: ignore[assignment]
    payload = request.to_json()
    try:
        size = len(json.dumps(payload, ensure_ascii=True, allow_nan=False))
    except (TypeError, ValueError) as err:
        return request, {}, error_response(request.id, "bad_request", f"request is not JSON-serialisable: {err}")
    if size > MAX_LINE_BYTES:
        return request, {}, error_response(request.id, "too_large",
                                           f"request of {size} bytes is over the {MAX_LINE_BYTES}-byte line limit")
    return request, payload, None


def _request_key(payload: dict) -> str:
    """What makes two requests the same for a deterministic service: everything but the id."""
    return json.dumps({k: v for k, v in payload.items() if k != "id"}, sort_keys=True, ensure_ascii=True,
                      separators=(",", ":"))
