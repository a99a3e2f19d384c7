"""A long-lived Node process running checker.js, one check at a time, bounded by deadlines.

The channel to Node is private to this backend (JSON Lines, described at the top of checker.js).
The process is killed and restarted when a check overruns its deadline, when Node dies, and when
its heap grows past a limit, so one hostile completion never wedges it.
"""

from __future__ import annotations

import json
import logging
import os
import queue
import shutil
import signal
import subprocess
import threading
import time
from itertools import count
from pathlib import Path
from typing import Any

from botgrpo_rewards.backend import BackendError, BackendTimeout

HERE = Path(__file__).resolve().parent
NODE_MODULES = HERE / "node_modules"
log = logging.getLogger("botgrpo_rewards.react")

_DIED = object()  # the reader thread's end-of-stream marker


class _NodeProcess:
    """One Node child: a reader thread turns its stdout lines into queue items."""

    def __init__(self, argv: list[str]):
        self.proc = subprocess.Popen(
            argv, cwd=HERE, stdin=subprocess.PIPE, stdout=subprocess.PIPE, start_new_session=True,
        )  # stderr is inherited: Node's own crash messages land in the service log
        self.lines: queue.Queue[Any] = queue.Queue()
        self.ready = False
        threading.Thread(target=self._read, name="react-node-reader", daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            try:
                self.lines.put(json.loads(raw))
            except ValueError:
                log.warning("react checker wrote a non-JSON line: %r", raw[:200])
        self.lines.put(_DIED)

    def send(self, msg: dict) -> None:
        assert self.proc.stdin is not None
        # ASCII-escaped JSON: lone surrogates travel as \udXXX escapes and reach JS unchanged.
        self.proc.stdin.write(json.dumps(msg, ensure_ascii=True).encode("ascii") + b"\n")
        self.proc.stdin.flush()

    def kill(self) -> None:
        """Kill Node and its esbuild helper (same process group), without waiting long."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            log.warning("react checker pid %s did not exit after SIGKILL", self.proc.pid)
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                stream.close()  # type: ignore[union-attr]
            except OSError:
                pass


class NodeChecker:
    """Thread-safe client of one checker.js process; `check` serialises calls with a lock."""

    def __init__(self, heap_limit_mb: int = 768, max_old_space_mb: int = 1536, startup_timeout_s: float = 60.0):
        node = shutil.which("node")
        if node is None:
            raise BackendError("Node.js was not found on PATH; install Node 20 (e.g. apt-get install nodejs)")
        for pkg in ("esbuild", "typescript", "@types/react"):
            if not (NODE_MODULES / pkg).is_dir():
                raise BackendError(f"{NODE_MODULES} lacks {pkg}; run `npm ci` in {HERE}")
        self._argv = [node, f"--max-old-space-size={max_old_space_mb}", str(HERE / "checker.js")]
        self.heap_limit = heap_limit_mb * 1024 * 1024
        self.startup_timeout_s = startup_timeout_s
        self.restarts = 0
        self._lock = threading.Lock()
        self._ids = count(1)
        self._node: _NodeProcess | None = None
        self._spawned_at = 0.0

    def start(self) -> None:
        """Spawn Node and wait until it has warmed up (lib files and @types/react parsed)."""
        with self._lock:
            self._spawn()
            self._await_ready(time.monotonic() + self.startup_timeout_s)

    def close(self) -> None:
        with self._lock:
            if self._node is not None:
                self._node.kill()
                self._node = None

    def check(self, code: str, types: bool, max_errors: int, deadline: float) -> dict[str, Any]:
        """The checker's findings for `code` (see checker.js); BackendTimeout past `deadline`."""
        if not self._lock.acquire(timeout=max(0.0, deadline - time.monotonic())):
            raise BackendTimeout("the react checker was busy with earlier requests until the deadline")
        try:
            if self._node is None:
                self._spawn()
            self._await_ready(deadline)
            rid = next(self._ids)
            try:
                self._node.send({"id": rid, "code": code, "types": types, "max_errors": max_errors})  # type: ignore[union-attr]
            except OSError as err:  # Node died since the last check
                self._restart()
                raise BackendError(f"the react checker (Node) was gone ({err}); restarted") from None
            reply = self._await(rid, deadline)
            if reply.get("heap", 0) > self.heap_limit:
                log.info("react checker heap %d MB is over the limit: restarting", reply["heap"] >> 20)
                self._restart()
            return reply
        finally:
            self._lock.release()

    @property
    def pid(self) -> int | None:
        """Process id of the current Node process (None before start or after close)."""
        return None if self._node is None else self._node.proc.pid

    def cpu_seconds(self) -> float | None:
        """CPU time (user + system) the current Node process has used, where /proc exists (Linux)."""
        node = self._node
        try:
            fields = Path(f"/proc/{node.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()  # type: ignore[union-attr]
        except (AttributeError, OSError):
            return None
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    # -- internals (called with the lock held) ------------------------------------------------

    def _spawn(self) -> None:
        self._node = _NodeProcess(self._argv)
        self._spawned_at = time.monotonic()

    def _restart(self) -> None:
        """Kill the current process and start a new one; it warms up while nobody waits on it."""
        if self._node is not None:
            self._node.kill()
        self.restarts += 1
        self._spawn()

    def _next(self, deadline: float) -> Any:
        try:
            return self._node.lines.get(timeout=max(0.0, deadline - time.monotonic()))  # type: ignore[union-attr]
        except queue.Empty:
            return None

    def _await_ready(self, deadline: float) -> None:
        node = self._node
        assert node is not None
        while not node.ready:
            limit = min(deadline, self._spawned_at + self.startup_timeout_s)
            msg = self._next(limit)
            if msg is _DIED:
                self._restart()
                raise BackendError("the react checker (Node) exited while starting; see the service log")
            if msg is None:
                if time.monotonic() >= self._spawned_at + self.startup_timeout_s:
                    self._restart()
                    raise BackendError(f"the react checker did not start within {self.startup_timeout_s:.0f} s")
                raise BackendTimeout("the react checker was still starting at the deadline")
            node.ready = bool(msg.get("ready"))

    def _await(self, rid: int, deadline: float) -> dict[str, Any]:
        while True:
            msg = self._next(deadline)
            if msg is None:
                self._restart()
                raise BackendTimeout("the react check did not finish by the deadline (checker restarted)")
            if msg is _DIED:
                code = self._node.proc.poll()  # type: ignore[union-attr]
                self._restart()
                raise BackendError(f"the react checker (Node) died during this check (exit {code}); restarted")
            if msg.get("id") != rid:
                continue  # a stale reply cannot happen after a restart; skip it defensively
            if "internal" in msg:  # Node survived it and rebuilt its TypeScript service
                raise BackendError(f"the react checker failed on this input: {msg['internal'].splitlines()[0]}")
            return msg
