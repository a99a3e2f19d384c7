"""The service runner shared by every backend: protocol I/O, validation, concurrency, deadlines.

A backend only scores one request (backend.py). This module reads requests, runs up to
`max_inflight` of them at once on daemon threads, answers each one exactly once and within its
deadline counted from when it starts (a watchdog answers `timeout` for the backend when it is late;
a late result is dropped), refuses a completion over the backend's size limit before it is queued,
and turns every backend failure or invalid result into an `error` response instead of crashing.
A backend that queues inside (math: for a free checker process) waits in `off_the_clock()`: that
wait moves the request's deadline too, so the deadline measures the request's own work and a
queue never turns into timeouts.
"""

from __future__ import annotations

import contextlib
import heapq
import logging
import queue
import sys
import threading
import time
import traceback
from typing import IO, Any, Callable, Iterator

from botgrpo_rewards.backend import Backend, BackendError, BackendTimeout, ScoreResult
from botgrpo_rewards.protocol import (
    MAX_LINE_BYTES,
    STATUS_TIMEOUT,
    Hello,
    Ping,
    Pong,
    ProtocolError,
    ScoreRequest,
    ScoreResponse,
    Shutdown,
    clean_info,
    decode_request,
    encode,
    error_response,
    read_lines,
    validate_metrics,
    validate_score,
    validate_spans,
)

log = logging.getLogger("botgrpo_rewards")

Reply = Callable[[ScoreResponse], None]


class _Slot:
    """One request's single answer: the first of (backend result, watchdog timeout) wins."""

    def __init__(self, request: ScoreRequest, reply: Reply, deadline: float):
        self.request = request
        self.deadline = deadline
        self.paused_since: float | None = None  # in the backend's own queue (off_the_clock) since then
        self._reply = reply
        self._lock = threading.Lock()
        self.answered = False

    def answer(self, response: ScoreResponse) -> bool:
        with self._lock:
            if self.answered:
                return False
            self.answered = True
        self._reply(response)
        return True


class _Scoring(threading.local):
    """The request a runner thread is scoring, with its runner (for off_the_clock)."""

    slot: _Slot | None = None
    runner: "ServiceRunner | None" = None


_scoring = _Scoring()


@contextlib.contextmanager
def off_the_clock() -> Iterator[None]:
    """For a backend, around a wait for its own scarce resource (a free checker process): the time
    inside does not count against the current request's deadline. Outside a runner thread it does nothing."""
    slot, runner = _scoring.slot, _scoring.runner
    if slot is None or runner is None:
        yield
        return
    runner._pause(slot)
    try:
        yield
    finally:
        runner._resume(slot)


def current_deadline(fallback: float) -> float:
    """The current request's deadline as moved by off_the_clock; `fallback` outside a runner thread."""
    slot = _scoring.slot
    return fallback if slot is None else slot.deadline


def result_to_response(request: ScoreRequest, result: Any) -> ScoreResponse:
    """Check a backend's ScoreResult against the protocol; raises ProtocolError when it breaks it."""
    rid = request.id
    if not isinstance(result, ScoreResult):
        raise ProtocolError(f"backend returned {type(result).__name__}, not a ScoreResult", rid, "bad_result")
    try:
        score = validate_score(result.score, rid)
        spans = validate_spans(list(result.spans), len(request.completion), rid)
        metrics = validate_metrics(result.metrics, rid)
    except ProtocolError as err:
        raise ProtocolError(f"backend result is invalid: {err}", rid, "bad_result") from None
    return ScoreResponse(id=rid, status="ok", score=score, spans=spans, metrics=metrics, info=clean_info(result.info))


def timeout_response(request: ScoreRequest) -> ScoreResponse:
    return error_response(request.id, "timeout", f"no result within deadline_ms={request.deadline_ms}", STATUS_TIMEOUT)


class ServiceRunner:
    """Runs score requests on a backend: `submit` is asynchronous, `score` waits for the answer."""

    def __init__(self, backend: Backend, max_inflight: int | None = None):
        self.backend = backend
        self.max_inflight = max(1, int(max_inflight or backend.max_inflight))
        self._queue: queue.SimpleQueue[_Slot] = queue.SimpleQueue()  # C put/get: a quarter less CPU per request than Queue
        self._heap: list[tuple[float, int, _Slot]] = []
        self._seq = 0
        self._cond = threading.Condition()
        self._open = 0  # submitted and not yet answered
        self._closed = False

    def hello(self) -> Hello:
        b = self.backend
        return Hello(service=b.name, version=b.version, capabilities=list(b.capabilities), max_inflight=self.max_inflight)

    def start(self) -> None:
        """Start the backend, then the worker threads and the watchdog (all daemons: a stuck backend
        call must never keep the process alive after shutdown)."""
        self.backend.start()
        for i in range(self.max_inflight):
            threading.Thread(target=self._work, name=f"score-{i}", daemon=True).start()
        threading.Thread(target=self._watch, name="watchdog", daemon=True).start()

    def submit(self, request: ScoreRequest, reply: Reply) -> None:
        """Queue a request; `reply` is called exactly once, by its deadline (counted from when a
        worker starts it, so a queue behind slow items never turns into timeouts) at the latest.
        A completion over the backend's size limit is answered `too_large` at once, unscored."""
        reply = self._counting(reply)
        with self._cond:
            self._open += 1
        limit = self.backend.max_completion_chars
        if len(request.completion) > limit:
            reply(error_response(request.id, "too_large", f"completion of {len(request.completion)} characters is "
                                 f"over the {self.backend.name} service's limit of {limit}"))
            return
        self._queue.put(_Slot(request, reply, 0.0))

    def score(self, request: ScoreRequest) -> ScoreResponse:
        box: list[ScoreResponse] = []
        done = threading.Event()

        def reply(resp: ScoreResponse) -> None:
            box.append(resp)
            done.set()

        self.submit(request, reply)
        done.wait()
        return box[0]

    def drain(self) -> None:
        """Wait until every submitted request has been answered (bounded by their deadlines)."""
        with self._cond:
            self._cond.wait_for(lambda: self._open == 0)

    def close(self) -> None:
        self.drain()
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        try:
            self.backend.close()
        except Exception:
            log.exception("backend close failed")

    def _counting(self, reply: Reply) -> Reply:
        def wrapped(resp: ScoreResponse) -> None:
            try:
                reply(resp)
            finally:
                with self._cond:
                    self._open -= 1
                    if self._open == 0:  # only drain() waits for this; waking the watchdog costs a switch
                        self._cond.notify_all()

        return wrapped

    def _work(self) -> None:
        _scoring.runner = self
        while True:
            slot = self._queue.get()
            slot.deadline = time.monotonic() + slot.request.deadline_ms / 1000  # the clock starts now
            with self._cond:
                self._watch_locked(slot)
            _scoring.slot = slot
            try:
                response = self._run(slot)
            finally:
                _scoring.slot = None
            slot.answer(response)

    def _watch_locked(self, slot: _Slot) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (slot.deadline, self._seq, slot))
        if self._heap[0][2] is slot:  # the watchdog sleeps until the earliest deadline
            self._cond.notify_all()

    def _pause(self, slot: _Slot) -> None:
        with self._cond:
            slot.paused_since = time.monotonic()  # the watchdog passes over it meanwhile

    def _resume(self, slot: _Slot) -> None:
        with self._cond:
            slot.deadline += time.monotonic() - (slot.paused_since or time.monotonic())
            slot.paused_since = None
            self._watch_locked(slot)  # its earlier entry is stale now: the watchdog drops it

    def _run(self, slot: _Slot) -> ScoreResponse:
        req = slot.request
        try:
            return result_to_response(req, self.backend.score(req, slot.deadline))
        except BackendTimeout as err:
            return error_response(req.id, "timeout", str(err) or "backend gave up at the deadline", STATUS_TIMEOUT)
        except BackendError as err:
            return error_response(req.id, err.type, str(err))
        except ProtocolError as err:
            log.error("request %r: %s", req.id, err)
            return error_response(req.id, err.type, str(err))
        except Exception as err:  # a backend bug must cost one request, never the service
            log.error("request %r: backend raised\n%s", req.id, traceback.format_exc())
            return error_response(req.id, "backend", f"{type(err).__name__}: {err}")

    def _watch(self) -> None:
        with self._cond:
            while not self._closed:
                now = time.monotonic()
                while self._heap and (self._heap[0][2].answered or self._heap[0][0] <= now):
                    due, _, slot = heapq.heappop(self._heap)
                    if not slot.answered and slot.paused_since is None and due >= slot.deadline:
                        # Answer outside the lock: the reply writes to a pipe and decrements _open.
                        self._cond.release()
                        try:
                            slot.answer(timeout_response(slot.request))
                        finally:
                            self._cond.acquire()
                        now = time.monotonic()
                wait = self._heap[0][0] - now if self._heap else None
                self._cond.wait(timeout=wait)


class LineWriter:
    """Writes protocol lines to a stream: one lock, one flush per line, never raises."""

    def __init__(self, stream: IO[str]):
        self._stream = stream
        self._lock = threading.Lock()

    def write(self, msg: Any) -> None:
        try:
            line = encode(msg)
        except (TypeError, ValueError) as err:  # an unencodable info value must not kill the answer
            rid = getattr(msg, "id", None)
            line = encode(error_response(rid, "bad_result", f"response could not be encoded: {err}"))
        with self._lock:
            try:
                self._stream.write(line + "\n")
                self._stream.flush()
            except (BrokenPipeError, ValueError, OSError):
                log.warning("client went away; dropping a line")


def serve_stdio(runner: ServiceRunner, stdin: IO[bytes] | None = None, stdout: IO[str] | None = None) -> int:
    """Serve JSON lines until shutdown or EOF; returns the exit code (0)."""
    stdin = stdin if stdin is not None else sys.stdin.buffer
    out = LineWriter(stdout if stdout is not None else sys.stdout)
    out.write(runner.hello())
    for line in read_lines(stdin, MAX_LINE_BYTES):
        if line is None:
            out.write(error_response(None, "too_large", f"line is over the {MAX_LINE_BYTES}-byte limit"))
            continue
        if not line.strip():
            continue
        try:
            req = decode_request(line)
        except ProtocolError as err:
            out.write(error_response(err.id, err.type, str(err)))
            continue
        if isinstance(req, Ping):
            out.write(Pong(req.id))
        elif isinstance(req, Shutdown):
            break
        else:
            runner.submit(req, out.write)
    runner.close()
    return 0
