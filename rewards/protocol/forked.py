"""A Python callable as a worker: the calling process forks, and the child runs a worker's loop
(function_worker.serve for a reward function, botgrpo_cli's tool_worker.serve for tools) on a pair
of pipes. The child inherits the callable as it is (a lambda, a closure over a tokenizer, a function
of an unguarded script), so nothing is pickled and nothing is imported again; it speaks the same
lines as a worker started from a spec, and FunctionProcess (functions.py) and Toolbox drive both
alike (send, receive, wait_ready, kill, returncode).

Linux and macOS only (fork). The child never returns into the caller's code: it leaves with
os._exit, so no atexit handler, open file or thread of the parent runs twice.
"""

from __future__ import annotations

import os
import queue
import signal
import stat
import threading
from typing import Any, Callable

from botgrpo_base.child import ChildExited

_EXITED = object()


def _close_other_pipes() -> None:
    """In the child: close the pipes it inherited beyond stdin, stdout and stderr (the caller's other
    children's stdin among them, so their end of input still reaches them when the caller closes
    it). Files and sockets stay open: the function may hold one."""
    try:
        fds = [int(fd) for fd in os.listdir("/proc/self/fd")]
    except OSError:  # no /proc (macOS): nothing closed
        return
    for fd in fds:
        try:
            if fd > 2 and stat.S_ISFIFO(os.fstat(fd).st_mode):
                os.close(fd)
        except OSError:
            pass


class ForkedChild:
    """A worker forked now, whose child runs `serve()` (a worker loop on fds 0 and 1 returning its exit
    code); see the module docstring."""

    def __init__(self, serve: Callable[[], int], name: str):
        to_child_r, to_child_w = os.pipe()
        from_child_r, from_child_w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: fds 0 and 1 are the pipes, then the worker loop, then out
            code = 1
            try:
                signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the trainer's to handle
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                os.dup2(to_child_r, 0)
                os.dup2(from_child_w, 1)
                for fd in (to_child_r, to_child_w, from_child_r, from_child_w):
                    os.close(fd)
                _close_other_pipes()
                code = serve()
            finally:
                os._exit(code)
        os.close(to_child_r)
        os.close(from_child_w)
        self.pid = pid
        self.name = name
        self.returncode: int | None = None
        self._stdin = os.fdopen(to_child_w, "wb")
        self._lines: queue.Queue = queue.Queue()
        self._write_lock = threading.Lock()
        self._reaped = threading.Lock()
        threading.Thread(target=self._read, args=(from_child_r,), name=f"{name}-reader", daemon=True).start()

    def _read(self, fd: int) -> None:
        with os.fdopen(fd, "rb") as stream:
            for line in stream:
                self._lines.put(line)
        self._reap()
        self._lines.put(_EXITED)

    def _reap(self) -> None:
        with self._reaped:
            if self.returncode is None:
                _, status = os.waitpid(self.pid, 0)
                self.returncode = os.waitstatus_to_exitcode(status)

    def wait_ready(self, timeout: float) -> bytes | None:
        """The first line (the worker's ready or error line); None when none came in `timeout` s."""
        return self.receive(timeout)

    def send(self, line: str) -> bool:
        with self._write_lock:
            try:
                self._stdin.write(line.encode("utf-8") + b"\n")
                self._stdin.flush()
                return True
            except (OSError, ValueError):
                return False

    def receive(self, timeout: float) -> bytes | None:
        try:
            item = self._lines.get(timeout=max(0.0, timeout))
        except queue.Empty:
            return None
        if item is _EXITED:
            self._lines.put(_EXITED)
            raise ChildExited(f"{self.name} exited (code {self.returncode})", self.returncode)
        return item

    def kill(self) -> None:
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            self._stdin.close()
        except OSError:
            pass
        self._reap()
