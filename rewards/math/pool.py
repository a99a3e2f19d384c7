"""A small pool of checker processes with a hard time limit per job.

Each job runs in a worker subprocess (worker.py). A job that overruns its limit gets its worker
killed and replaced in the background; no signals or alarms are used in the caller's threads.
The limit is on the worker's CPU time, not the wall clock: on a loaded machine a check gets less of
a core per second, and a wall-clock limit would make the verdict depend on how busy the machine is.
A wall-clock bound (the request's deadline) still applies on top. Thread-safe: callers share a
queue of idle workers.
"""

from __future__ import annotations

import json
import os
import queue
import select
import subprocess
import sys
import threading
import time
from typing import Any

STARTUP_TIMEOUT_S = 60.0
POLL_S = 0.02  # how often a running job's CPU time is read
_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of a process (Linux /proc); None where /proc cannot say."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / _TICK
    except (OSError, IndexError, ValueError):
        return None


class JobTimeout(Exception):
    """The job did not finish within its limit (its worker was replaced)."""


class NoWorker(JobTimeout):
    """No worker became free within the wait (all busy or restarting)."""


class JobFailed(Exception):
    """The worker raised or died while running the job."""


class WorkerDied(JobFailed):
    """The worker process exited (killed from outside, or crashed) while running the job."""


class _Worker:
    """One checker subprocess and its line-buffered reader."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "botgrpo_rewards.math.worker"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        )
        self._buffer = b""

    def send(self, job: str, args: list) -> None:
        line = json.dumps({"job": job, "args": args}, ensure_ascii=True) + "\n"
        self.process.stdin.write(line.encode("ascii"))
        self.process.stdin.flush()

    def receive(self, timeout: float, cpu_limit: float | None = None) -> dict | None:
        """The next result line, or None if none arrived within `timeout` wall seconds or the
        worker used more than `cpu_limit` CPU seconds meanwhile."""
        end = time.monotonic() + timeout
        fd = self.process.stdout.fileno()
        cpu_start = cpu_seconds(self.process.pid) if cpu_limit is not None else None
        while b"\n" not in self._buffer:
            left = end - time.monotonic()
            if left <= 0:
                return None
            if not select.select([fd], [], [], left if cpu_start is None else min(left, POLL_S))[0]:
                if cpu_start is not None and (cpu_seconds(self.process.pid) or cpu_start) - cpu_start > cpu_limit:
                    return None
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                raise EOFError("checker process exited")
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return json.loads(line)

    def kill(self) -> None:
        self.process.kill()
        self.process.wait(5)
        for stream in (self.process.stdin, self.process.stdout):
            try:
                stream.close()
            except OSError:  # unflushed input to a dead process
                pass


class WorkerPool:
    """`size` checker processes; `run(job, args, timeout)` returns the job's result."""

    def __init__(self, size: int = 2):
        self.size = size
        self.replaced = 0  # workers killed for overrunning or found dead
        self._idle: queue.Queue[_Worker] = queue.Queue()
        self._lock = threading.Lock()
        self._closed = False

    def start(self) -> None:
        """Start the workers and wait until each has loaded sympy."""
        workers = [_Worker() for _ in range(self.size)]
        for w in workers:
            if w.receive(STARTUP_TIMEOUT_S) is None:
                raise RuntimeError("math checker process did not start")
            self._idle.put(w)

    def _respawn(self, attempts: int = 3) -> None:
        """Start a replacement worker; a failed start is retried so the pool does not shrink."""
        for attempt in range(attempts):
            worker = _Worker()
            try:
                ready = worker.receive(STARTUP_TIMEOUT_S)
            except (EOFError, ValueError):
                ready = None
            if ready is not None and not self._closed:
                self._idle.put(worker)
                return
            worker.kill()
            if self._closed:
                return
            time.sleep(0.5 * (attempt + 1))

    def _replace(self, worker: _Worker) -> None:
        """Kill `worker` and start a fresh one off the caller's thread."""
        with self._lock:
            self.replaced += 1
        worker.kill()
        if not self._closed:
            threading.Thread(target=self._respawn, daemon=True).start()

    def run(self, job: str, args: list, cpu_limit: float, wall_limit: float) -> Any:
        """Run `job(*args)` in a worker: wait for a free one, then let it run until it has used
        `cpu_limit` CPU seconds; everything (the wait included) ends after `wall_limit` seconds."""
        end = time.monotonic() + max(wall_limit, 0.0)
        try:
            worker = self._idle.get(timeout=max(wall_limit, 0.0))
        except queue.Empty:
            raise NoWorker("no checker process was free in time") from None
        try:
            worker.send(job, args)
            reply = worker.receive(max(end - time.monotonic(), 0.0), cpu_limit)
        except (EOFError, OSError, ValueError):
            self._replace(worker)
            raise WorkerDied("checker process died") from None
        if reply is None:
            self._replace(worker)
            raise JobTimeout(f"check did not finish within {cpu_limit:.1f} CPU s")
        self._idle.put(worker)
        if not reply.get("ok"):
            raise JobFailed(str(reply.get("error")))
        return reply["result"]

    def pids(self) -> list[int]:
        """Process ids of the idle workers (for tests and diagnostics)."""
        return [w.process.pid for w in list(self._idle.queue)]

    def close(self) -> None:
        self._closed = True
        while True:
            try:
                worker = self._idle.get_nowait()
            except queue.Empty:
                return
            worker.kill()
