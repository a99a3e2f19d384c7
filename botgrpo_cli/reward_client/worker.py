"""One reward service child process: start it, read its hello, send lines, read lines."""

from __future__ import annotations

import collections
import os
import subprocess
import threading
from typing import Callable

from botgrpo_rewards.protocol import Hello, ProtocolError, ServiceStartError, decode_message

STDERR_TAIL_LINES = 40


class Worker:
    """A started service process. `on_line(worker, line)` gets each stdout line after the hello,
    `on_exit(worker)` runs once when stdout closes (the process died or was killed)."""

    def __init__(self, service: str, argv: list[str], env: dict[str, str] | None, slot: int, generation: int):
        self.service = service
        self.slot = slot
        self.generation = generation
        self.hello: Hello | None = None
        self.inflight: dict[str, object] = {}  # internal id -> job; guarded by the pool's lock
        self.hung = False  # set when the pool kills it for missing a deadline
        self.isolated = False  # running one suspect request alone; guarded by the pool's lock
        self.exited = False  # stdout closed; set before on_exit runs
        self._stderr: collections.deque[str] = collections.deque(maxlen=STDERR_TAIL_LINES)
        self._write_lock = threading.Lock()
        self._hello_ready = threading.Event()
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, **(env or {})},  # `env` adds to (or overrides) the caller's environment
        )
        threading.Thread(target=self._drain_stderr, name=f"reward-{service}-{slot}-stderr", daemon=True).start()

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stderr_tail(self) -> str:
        return "\n".join(self._stderr)

    def begin(self, on_line: Callable[["Worker", bytes], None], on_exit: Callable[["Worker"], None]) -> None:
        """Start the stdout reader; the first line must be the hello."""
        threading.Thread(target=self._read, args=(on_line, on_exit), name=f"reward-{self.service}-{self.slot}", daemon=True).start()

    def wait_hello(self, timeout_s: float) -> Hello:
        """Block until the hello line arrived; ServiceStartError (with the stderr tail) otherwise."""
        if not self._hello_ready.wait(timeout_s):
            self.kill()
            raise self._start_error(f"sent no hello line within {timeout_s:.0f} s")
        if self.hello is None:
            self.proc.wait()
            raise self._start_error(f"exited with code {self.proc.returncode} before it was ready")
        return self.hello

    def send(self, line: str) -> bool:
        """Write one line; False when the process is gone (its exit handler re-sends what it had)."""
        data = (line + "\n").encode("utf-8")
        with self._write_lock:
            try:
                self.proc.stdin.write(data)  # type: ignore[union-attr]  # buffered: no partial writes
                self.proc.stdin.flush()  # type: ignore[union-attr]
                return True
            except (BrokenPipeError, OSError, ValueError):
                return False

    def kill(self) -> None:
        try:
            self.proc.kill()
        except OSError:
            pass

    def close_stdin(self) -> None:
        with self._write_lock:
            try:
                self.proc.stdin.close()  # type: ignore[union-attr]
            except OSError:
                pass

    def _start_error(self, what: str) -> ServiceStartError:
        tail = self.stderr_tail().strip() or "(nothing on stderr)"
        return ServiceStartError(
            f"reward service {self.service!r} {what}. Its stderr ended with:\n{tail}\n"
            f"Run `botgrpo reward serve {self.service}` by hand to see the problem."
        )

    def _read(self, on_line: Callable[["Worker", bytes], None], on_exit: Callable[["Worker"], None]) -> None:
        stdout = self.proc.stdout
        assert stdout is not None
        try:
            first = stdout.readline()
            try:
                msg = decode_message(first) if first else None
            except ProtocolError as err:
                self._stderr.append(f"(client) first line was not a hello: {err}")
                msg = None
            if isinstance(msg, Hello):
                self.hello = msg
            self._hello_ready.set()
            if self.hello is None:
                self.kill()
            else:
                for line in iter(stdout.readline, b""):
                    on_line(self, line)
        finally:
            self._hello_ready.set()
            self.kill()  # stdout closed: make sure the process is really gone before re-sending
            self.proc.wait()
            self.exited = True
            on_exit(self)

    def _drain_stderr(self) -> None:
        assert self.proc.stderr is not None
        for raw in iter(self.proc.stderr.readline, b""):
            self._stderr.append(raw.decode("utf-8", errors="replace").rstrip())
