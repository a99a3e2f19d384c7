"""A small pool of checker processes with a hard time limit per job.

Each job runs in a worker subprocess (worker.py). A job that overruns its limit gets its worker
killed and replaced in the background; no signals or alarms are used in the caller's threads.
The limit is on the worker's CPU time, not the wall clock: on a loaded machine a check gets less of
a core per second, and a wall-clock limit would make the verdict depend on how busy the machine is.
A wall-clock bound (the request's deadline) still applies on top, counted from the job's start: the
wait for a free worker (`acquire`) is the caller's queue, not the job's time. Thread-safe: callers
share a queue of idle workers. Each worker is a LineChild (botgrpo_rewards.protocol), the one manager of
child processes; this module adds the job lines, the CPU limit and the replacement policy.
"""

from __future__ import annotations

import json
import queue
import sys
import threading
import time
from typing import Any, Callable

from botgrpo_rewards.protocol import ChildExited, LineChild

STARTUP_TIMEOUT_S = 60.0
POLL_S = 0.02  # how often a running job's CPU time is read


class JobTimeout(Exception):
    """The job did not finish within its limit (its worker was replaced)."""


class NoWorker(JobTimeout):
    """No worker became free within the wait (all busy or restarting)."""


class JobFailed(Exception):
    """The worker raised or died while running the job."""


class WorkerDied(JobFailed):
    """The worker process exited (killed from outside, or crashed) while running the job."""


def _is_ready(line: bytes) -> bool:
    try:
        return json.loads(line).get("result") == "ready"
    except (ValueError, AttributeError):
        return False


def _worker() -> LineChild:
    """A checker subprocess; its first line says it has loaded sympy (worker.py)."""
    return LineChild([sys.executable, "-m", "botgrpo_rewards.math.worker"], "math-checker", ready=_is_ready,
                     stderr="discard")


def _receive(worker: LineChild, timeout: float, cpu_limit: float) -> dict | None:
    """The job's result line, or None if none arrived within `timeout` wall seconds or the worker
    used more than `cpu_limit` CPU seconds meanwhile. ChildExited when the worker died."""
    end = time.monotonic() + timeout
    cpu_start = worker.cpu_seconds()
    while True:
        left = end - time.monotonic()
        if left <= 0:
            return None
        line = worker.receive(left if cpu_start is None else min(left, POLL_S))
        if line is not None:
            return json.loads(line)
        if cpu_start is not None and (worker.cpu_seconds() or cpu_start) - cpu_start > cpu_limit:
            return None


class WorkerPool:
    """`size` checker processes; `run(job, args, timeout)` returns the job's result."""

    def __init__(self, size: int = 2):
        self.size = size
        self.replaced = 0  # workers killed for overrunning or found dead
        self._idle: queue.Queue[LineChild] = queue.Queue()
        self._lock = threading.Lock()
        self._closed = False

    def start(self) -> None:
        """Start the workers and wait until each has loaded sympy."""
        workers = [_worker() for _ in range(self.size)]  # they load sympy in parallel
        for w in workers:
            try:
                ready = w.wait_ready(STARTUP_TIMEOUT_S)
            except ChildExited:
                ready = None
            if ready is None:
                for other in workers:
                    other.kill()
                raise RuntimeError("math checker process did not start")
            self._idle.put(w)

    def _respawn(self, start: Callable[[], LineChild], attempts: int = 3) -> None:
        """Start a replacement worker; a failed start is retried so the pool does not shrink."""
        for attempt in range(attempts):
            worker = start()
            try:
                ready = worker.wait_ready(STARTUP_TIMEOUT_S)
            except ChildExited:
                ready = None
            if ready is not None and not self._closed:
                self._idle.put(worker)
                return
            worker.kill()
            if self._closed:
                return
            time.sleep(0.5 * (attempt + 1))

    def _replace(self, worker: LineChild) -> None:
        """Kill `worker` and start a fresh one off the caller's thread."""
        with self._lock:
            self.replaced += 1
        worker.kill()
        if not self._closed:
            threading.Thread(target=self._respawn, args=(worker.fresh,), daemon=True).start()

    def acquire(self, timeout: float) -> LineChild:
        """A free worker, waiting up to `timeout` seconds for one (NoWorker after it)."""
        try:
            return self._idle.get(timeout=max(timeout, 0.0))
        except queue.Empty:
            raise NoWorker("no checker process was free in time") from None

    def release(self, worker: LineChild) -> None:
        """Give back a worker from `acquire` that ran no job."""
        self._idle.put(worker)

    def run_on(self, worker: LineChild, job: str, args: list, cpu_limit: float, wall_limit: float) -> Any:
        """Run `job(*args)` on an acquired worker (given back, or replaced, by the time this returns):
        it may use `cpu_limit` CPU seconds and `wall_limit` wall seconds, both counted from the job's start."""
        try:
            if not worker.send(json.dumps({"job": job, "args": args}, ensure_ascii=True)):
                raise ChildExited("checker process gone")
            reply = _receive(worker, max(wall_limit, 0.0), cpu_limit)
        except (ChildExited, ValueError):  # died, or wrote a broken line while dying
            self._replace(worker)
            raise WorkerDied("checker process died") from None
        if reply is None:
            self._replace(worker)
            raise JobTimeout(f"check did not finish within {cpu_limit:.1f} CPU s")
        self._idle.put(worker)
        if not reply.get("ok"):
            raise JobFailed(str(reply.get("error")))
        return reply["result"]

    def run(self, job: str, args: list, cpu_limit: float, wall_limit: float) -> Any:
        """acquire + run_on with one wall-clock bound on both: everything ends after `wall_limit` seconds."""
        end = time.monotonic() + max(wall_limit, 0.0)
        worker = self.acquire(wall_limit)
        return self.run_on(worker, job, args, cpu_limit, end - time.monotonic())

    def pids(self) -> list[int]:
        """Process ids of the idle workers (for tests and diagnostics)."""
        return [w.pid for w in list(self._idle.queue)]

    def close(self) -> None:
        self._closed = True
        while True:
            try:
                worker = self._idle.get_nowait()
            except queue.Empty:
                return
            worker.kill()
