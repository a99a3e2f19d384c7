"""TSX -> JavaScript through one long-lived Node + esbuild helper (compiler.js), shared by threads."""

from __future__ import annotations

import itertools
import json
import shutil
import threading
import time
from concurrent.futures import Future
from pathlib import Path

from botgrpo_rewards.protocol import LineChild
from botgrpo_rewards.react.node_home import missing, node_home

HERE = Path(__file__).resolve().parent


class CompileError(Exception):
    """esbuild rejected the component (the model's fault): the render fails, it is not a backend error."""


class CompilerUnavailable(RuntimeError):
    """Node or the pinned node_modules are missing (the installation's fault)."""


class Compiler:
    """Pipelined JSON-lines client of compiler.js; `compile` is thread-safe."""

    def __init__(self):
        node = shutil.which("node")
        if node is None:
            raise CompilerUnavailable("Node.js was not found on PATH; install Node 20 (apt-get install nodejs)")
        home = node_home()  # esbuild, react and react-dom: the React checker's packages
        if (problem := missing(home)) is not None:
            raise CompilerUnavailable(problem)
        self._argv = [node, str(HERE / "compiler.js"), str(home / "node_modules")]
        self._ids = itertools.count()
        self._lock = threading.Lock()
        self._runtime: str | None = None
        self.restarts = 0
        self._spawn()

    def _spawn(self) -> None:
        """Start a helper with its own table of waiting calls (so one that died fails only its own)."""
        pending: dict[int, Future] = {}
        self._pending = pending
        self._child = LineChild(self._argv, "render-compiler", on_line=lambda line: self._answer(pending, line),
                                on_exit=lambda: self._fail(pending))

    @staticmethod
    def _answer(pending: dict[int, Future], line: bytes) -> None:
        msg = json.loads(line)
        fut = pending.pop(msg["id"], None)
        if fut is not None:
            fut.set_result(msg)

    def _fail(self, pending: dict[int, Future]) -> None:
        with self._lock:  # the helper died: fail whatever still waits; the next call respawns it
            for fut in pending.values():
                fut.set_exception(CompilerUnavailable("the esbuild helper exited"))
            pending.clear()

    def _ask(self, msg: dict, timeout: float) -> dict:
        """Send `msg` and wait for its reply. A call in flight when the helper died is sent once
        more, to a fresh helper (compiling is pure, so a re-send cannot change the answer)."""
        end = time.monotonic() + timeout
        try:
            return self._send(msg).result(timeout=timeout)
        except CompilerUnavailable:  # the helper died with this call in flight
            return self._send(msg).result(timeout=max(0.0, end - time.monotonic()))

    def _send(self, msg: dict) -> Future:
        fut: Future = Future()
        with self._lock:
            msg["id"] = next(self._ids)
            for attempt in range(2):
                if attempt or self._child.exited or self._child.proc.poll() is not None:
                    self.restarts += 1
                    self._spawn()
                self._pending[msg["id"]] = fut
                if self._child.send(json.dumps(msg)):
                    return fut
                self._pending.pop(msg["id"], None)  # the helper is dying but poll() did not see it yet
        raise CompilerUnavailable("the esbuild helper cannot be started")

    @property
    def pid(self) -> int:
        """Process id of the current helper (for tests and diagnostics)."""
        return self._child.pid

    def runtime(self) -> str:
        """React 18 + ReactDOM as one IIFE defining `__botgrpoRequire`; built once and cached."""
        if self._runtime is None:
            reply = self._ask({"op": "runtime"}, timeout=60.0)
            if "error" in reply:
                raise CompilerUnavailable(f"could not bundle React: {reply['error']}")
            self._runtime = reply["js"]
        return self._runtime

    def compile(self, code: str, timeout: float = 10.0) -> str:
        """The component as CommonJS (imports become require calls). Raises CompileError."""
        reply = self._ask({"op": "compile", "code": code}, timeout=timeout)
        if "error" in reply:
            raise CompileError(reply["error"])
        return reply["js"]

    def close(self) -> None:
        self._child.stop(timeout=5)  # end of input: compiler.js exits once its replies are written
