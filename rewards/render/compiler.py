"""TSX -> JavaScript through one long-lived Node + esbuild helper (compiler.js), shared by threads."""

from __future__ import annotations

import itertools
import json
import shutil
import subprocess
import threading
from concurrent.futures import Future
from pathlib import Path

HERE = Path(__file__).resolve().parent
NODE_MODULES = HERE.parent / "react" / "node_modules"


class CompileError(Exception):
    """esbuild rejected the component (the model's fault): the render fails, it is not a backend error."""


class CompilerUnavailable(RuntimeError):
    """Node or the pinned node_modules are missing (the installation's fault)."""


class Compiler:
    """Pipelined JSON-lines client of compiler.js; `compile` is thread-safe."""

    def __init__(self, node_modules: Path = NODE_MODULES):
        node = shutil.which("node")
        if node is None:
            raise CompilerUnavailable("Node.js was not found on PATH; install Node 20 (apt-get install nodejs)")
        if not (node_modules / "esbuild").is_dir():
            raise CompilerUnavailable(f"{node_modules} has no esbuild; run `npm ci` in {node_modules.parent}")
        self._argv = [node, str(HERE / "compiler.js"), str(node_modules)]
        self._ids = itertools.count()
        self._lock = threading.Lock()
        self._runtime: str | None = None
        self.restarts = 0
        self._spawn()

    def _spawn(self) -> None:
        """Start a helper with its own table of waiting calls (so one that died fails only its own)."""
        self._proc = subprocess.Popen(self._argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                      encoding="utf-8", bufsize=1)
        self._pending: dict[int, Future] = {}
        threading.Thread(target=self._read, args=(self._proc, self._pending), name="render-compiler", daemon=True).start()

    def _read(self, proc: subprocess.Popen, pending: dict[int, Future]) -> None:
        for line in proc.stdout:  # type: ignore[union-attr]
            msg = json.loads(line)
            fut = pending.pop(msg["id"], None)
            if fut is not None:
                fut.set_result(msg)
        with self._lock:  # the helper died: fail whatever still waits; the next call respawns it
            for fut in pending.values():
                fut.set_exception(CompilerUnavailable("the esbuild helper exited"))
            pending.clear()

    def _ask(self, msg: dict, timeout: float) -> dict:
        fut: Future = Future()
        with self._lock:
            msg["id"] = next(self._ids)
            for attempt in range(2):
                if self._proc.poll() is not None or attempt:
                    self.restarts += 1
                    self._spawn()
                self._pending[msg["id"]] = fut
                try:
                    self._proc.stdin.write(json.dumps(msg) + "\n")  # type: ignore[union-attr]
                    self._proc.stdin.flush()  # type: ignore[union-attr]
                    break
                except OSError:  # the helper is dying but poll() did not see it yet
                    self._pending.pop(msg["id"], None)
            else:
                raise CompilerUnavailable("the esbuild helper cannot be started")
        return fut.result(timeout=timeout)

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
        if self._proc.poll() is None:
            self._proc.stdin.close()  # type: ignore[union-attr]
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
