"""The stdio transport's other end: a child process that reads lines on stdin and writes lines on stdout.

Every child the client and the services drive is one of these: the reward client's service
processes, the math checker workers, the react Node checker and render's esbuild compiler. This
class owns the process's life: start it, wait for its ready line, send lines, hand over each line
it writes (to a callback or a queue), notice that it exited, kill it, start a fresh copy. What the
lines mean, how work is batched, which deadline applies and what is re-sent after a crash stay
with each caller, which knows its own protocol.

A child that exits, is killed or closes its stdout is gone for good: the reader thread then makes
sure the process is dead (so nothing still runs when the caller re-sends its work elsewhere),
reaps it, and only then reports the exit.

Children that do not speak lines (training ranks, a benchmark's runs) use the same class with
their stdout inherited or written to a file: then a waiter thread reaps them and reports the exit,
`terminate` asks them to stop (SIGTERM, so a trainer saves) before it kills their process group,
and `stop_with_parent` makes the kernel send them SIGTERM should the parent die without a word.
"""

from __future__ import annotations

import collections
import ctypes
import ctypes.util
import functools
import os
import queue
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Callable

STDERR_TAIL_LINES = 40
KILL_WAIT_S = 5.0
_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_EXITED = object()  # queued after the last line when no on_line callback is given
_PR_SET_PDEATHSIG = 1


class ChildExited(Exception):
    """The child's stdout closed (it exited, crashed or was killed); `returncode` says how."""

    def __init__(self, message: str, returncode: int | None = None):
        super().__init__(message)
        self.returncode = returncode


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of a process (Linux /proc); None where /proc cannot say."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / _TICK
    except (OSError, IndexError, ValueError):
        return None


class LineChild:
    """One started child process speaking lines (see the module docstring).

    - `ready`: when given, the child's first line is its handshake (a hello, a "ready" object):
      it is kept as `ready_line` and not delivered; a first line `ready` rejects kills the child.
    - `on_line(line)` gets every other stdout line (bytes, newline included) on the reader thread;
      without it lines queue up for `receive`.
    - `on_exit()` runs once, on the reader thread, after the process has been reaped.
    - `stdout`: "lines" (read line by line, as above), "inherit" (the parent's: a training rank's
      console) or a file path (appended to: a run's log). Only "lines" allows `ready` and `on_line`.
    - `stderr`: "inherit" (the parent's stderr: a service log), "tail" (kept: `stderr_tail()`),
      "discard", or "stdout" (into the same place as stdout, e.g. the log file).
    - `own_group`: start it in its own process group so `kill` also ends its helpers (esbuild).
    - `stop_with_parent`: the kernel sends it SIGTERM when the thread that started it dies (Linux;
      so start it from the main thread), even by SIGKILL, when no `finally` runs.
    """

    def __init__(self, argv: list[str], name: str, *, env: dict[str, str] | None = None, cwd: str | Path | None = None,
                 ready: Callable[[bytes], bool] | None = None, on_line: Callable[[bytes], None] | None = None,
                 on_exit: Callable[[], None] | None = None, stdout: str | Path = "lines", stderr: str = "inherit",
                 own_group: bool = False, stop_with_parent: bool = False):
        self.argv, self.name = list(argv), name
        self._settings = dict(env=env, cwd=cwd, ready=ready, on_line=on_line, on_exit=on_exit, stdout=stdout,
                              stderr=stderr, own_group=own_group, stop_with_parent=stop_with_parent)
        self._ready_check = ready
        self._on_line, self._on_exit = on_line, on_exit
        self._own_group = own_group
        self.ready_line: bytes | None = None
        self._not_ready = ""  # why the child ended before its ready line, when it was rejected
        self.started_at = time.monotonic()
        self._ready = threading.Event()  # set at the ready line, or when the child exits before it
        self._exited = threading.Event()
        self._lines: queue.Queue = queue.Queue()
        self._stderr: collections.deque[str] = collections.deque(maxlen=STDERR_TAIL_LINES)
        self._stderr_read = threading.Event()  # set once stderr reached its end (or is not kept)
        self._write_lock = threading.Lock()
        pipes = {"inherit": None, "tail": subprocess.PIPE, "discard": subprocess.DEVNULL, "stdout": subprocess.STDOUT}
        if stderr not in pipes:
            raise ValueError(f"stderr must be one of {', '.join(pipes)}, not {stderr!r}")
        self._lines_out = stdout == "lines"
        if not self._lines_out and (ready is not None or on_line is not None):
            raise ValueError(f"ready and on_line need stdout='lines', not {stdout!r}")
        log = None if stdout in ("lines", "inherit") else open(stdout, "ab")  # the child keeps its own handle
        try:
            self.proc = subprocess.Popen(  # OSError (no such program) goes to the caller
                self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE if self._lines_out else log,
                stderr=pipes[stderr], cwd=cwd,
                env=None if env is None else {**os.environ, **env},  # `env` adds to (or overrides) ours
                start_new_session=own_group,
                preexec_fn=functools.partial(_term_when_parent_dies, os.getpid()) if stop_with_parent else None,
            )
        finally:
            if log is not None:
                log.close()
        if stderr == "tail":
            threading.Thread(target=self._drain_stderr, name=f"{name}-stderr", daemon=True).start()
        else:
            self._stderr_read.set()
        watch = self._read if self._lines_out else self._wait
        threading.Thread(target=watch, name=f"{name}-reader", daemon=True).start()

    # ---------------------------------------------------------------- state

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def exited(self) -> bool:
        """True once the process is gone and reaped (set before `on_exit` runs)."""
        return self._exited.is_set()

    @property
    def returncode(self) -> int | None:
        return self.proc.returncode

    def stderr_tail(self) -> str:
        """The last lines the child wrote on stderr (with stderr="tail"; empty otherwise). Once the
        child has exited, everything it wrote is read first: on a busy machine the reader thread can
        still be behind when the exit is seen, and a start error would show none of the reason."""
        if self.exited:
            self._stderr_read.wait(KILL_WAIT_S)  # bounded: a helper it left behind may hold the pipe open
        return "\n".join(self._stderr)

    def cpu_seconds(self) -> float | None:
        """CPU time the child has used so far (Linux; None elsewhere or once it is reaped)."""
        return cpu_seconds(self.proc.pid)

    def fresh(self) -> "LineChild":
        """A new child with the same program and settings (the caller kills this one, or it died)."""
        return LineChild(self.argv, self.name, **self._settings)

    # ---------------------------------------------------------------- talking to it

    def wait_ready(self, timeout: float) -> bytes | None:
        """The ready line; None if it has not come within `timeout` seconds (the child keeps
        starting: the caller decides whether to wait again or kill it). Raises ChildExited when
        the child exited first or its first line was not a ready line."""
        self._ready.wait(max(0.0, timeout))
        if self.ready_line is not None:
            return self.ready_line
        if self._ready.is_set():
            self._exited.wait(KILL_WAIT_S)
            why = self._not_ready or f"exited with code {self.returncode} before it was ready"
            raise ChildExited(f"{self.name} {why}", self.returncode)
        return None

    def send(self, line: str | bytes) -> bool:
        """Write one line (a newline is added); False when the child is gone. Thread-safe."""
        data = line.encode("utf-8") if isinstance(line, str) else line
        with self._write_lock:
            try:
                self.proc.stdin.write(data + b"\n")  # type: ignore[union-attr]
                self.proc.stdin.flush()  # type: ignore[union-attr]
                return True
            except (OSError, ValueError):  # broken pipe, or stdin already closed
                return False

    def receive(self, timeout: float) -> bytes | None:
        """The next line (without on_line); None when none came within `timeout` seconds.
        Raises ChildExited once the child is gone and every line it wrote has been received."""
        try:
            item = self._lines.get(timeout=max(0.0, timeout))
        except queue.Empty:
            return None
        if item is _EXITED:
            self._lines.put(_EXITED)  # every later call says the same
            raise ChildExited(f"{self.name} exited (code {self.returncode})", self.returncode)
        return item

    # ---------------------------------------------------------------- ending it

    def terminate(self, timeout: float) -> None:
        """Ask the child to stop (SIGTERM to it alone, so it can end its own helpers and save), wait
        up to `timeout` seconds, then kill it (its group with own_group). See `terminate_all`."""
        terminate_all([self], timeout)

    def _signal(self, signum: int) -> None:
        try:
            self.proc.send_signal(signum)
        except (ProcessLookupError, OSError):
            pass  # already gone

    def kill(self) -> None:
        """SIGKILL the child (its whole group with own_group) and reap it; never raises."""
        try:
            if self._own_group:
                os.killpg(self.proc.pid, signal.SIGKILL)
            else:
                self.proc.kill()
        except (ProcessLookupError, PermissionError, OSError):
            pass  # already gone
        try:
            self.proc.wait(KILL_WAIT_S)
        except subprocess.TimeoutExpired:
            pass
        self.close_stdin()

    def close_stdin(self) -> None:
        """End the child's input: a well-behaved child finishes what it has and exits."""
        with self._write_lock:
            try:
                self.proc.stdin.close()  # type: ignore[union-attr]
            except OSError:  # unflushed input to a dead process
                pass

    def stop(self, timeout: float) -> None:
        """Close stdin and wait up to `timeout` seconds for the child to exit; then kill it."""
        self.close_stdin()
        try:
            self.proc.wait(max(0.0, timeout))
        except subprocess.TimeoutExpired:
            self.kill()

    # ---------------------------------------------------------------- threads

    def _wait(self) -> None:
        """Without a stdout pipe: the exit is the process's own; reap it and report it."""
        try:
            self.proc.wait()
        finally:
            self.kill()  # its helpers in its group go with it, as after a closed stdout
            self._gone()

    def _read(self) -> None:
        stdout = self.proc.stdout
        assert stdout is not None
        try:
            for line in iter(stdout.readline, b""):
                if self._ready_check is not None and not self._ready.is_set():
                    if self._accepts(line):
                        self.ready_line = line
                        self._ready.set()
                        continue
                    self._not_ready = f"its first line was not a ready line: {line[:200]!r}"
                    self._stderr.append(f"({self.name}: {self._not_ready})")
                    break
                if self._on_line is None:
                    self._lines.put(line)
                else:
                    self._on_line(line)
        finally:
            self.kill()  # stdout closed: the process must be really gone before anyone re-sends its work
            try:
                stdout.close()
            except OSError:
                pass
            self._gone()

    def _gone(self) -> None:
        self._exited.set()
        self._ready.set()
        self._lines.put(_EXITED)
        if self._on_exit is not None:
            self._on_exit()

    def _accepts(self, line: bytes) -> bool:
        try:
            return bool(self._ready_check(line))  # type: ignore[misc]
        except Exception:  # a check that chokes on a garbled line has not seen a ready line
            return False

    def _drain_stderr(self) -> None:
        assert self.proc.stderr is not None
        try:
            for raw in iter(self.proc.stderr.readline, b""):
                self._stderr.append(raw.decode("utf-8", errors="replace").rstrip())
            self.proc.stderr.close()
        finally:
            self._stderr_read.set()


def terminate_all(children: list[LineChild], timeout: float) -> None:
    """SIGTERM every child at once, give them `timeout` seconds together to exit (a trainer saves
    its last step), then kill the ones still running; returns once every one is reaped."""
    for child in children:
        if child.returncode is None:
            child._signal(signal.SIGTERM)
    deadline = time.monotonic() + max(0.0, timeout)
    for child in children:
        try:
            child.proc.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
        child.kill()  # the group's leftovers too, and reaps it


def _load_prctl() -> Callable[..., int] | None:
    """libc's prctl, looked up now: after fork the child may only call what is already loaded."""
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True).prctl
    except (OSError, AttributeError):  # not Linux: stop_with_parent has no effect
        return None


_prctl = _load_prctl()


def _term_when_parent_dies(parent: int) -> None:
    """Runs in the child between fork and exec: SIGTERM it when the parent thread goes (and now,
    should the parent already have gone before the request was made)."""
    if _prctl is not None:
        _prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
        if os.getppid() != parent:
            os.kill(os.getpid(), signal.SIGTERM)
