"""The child process that runs a user's reward function: one JSON batch per stdin line, one
JSON result per stdout line (JSON both ways, never pickle).

Started by FunctionProcess (rewards/protocol/functions.py) as `python -m botgrpo_rewards.protocol.function_worker
SPEC [NAME [MEMORY_MB]]`, or forked from the caller for a Python callable (protocol/forked.py), both
running `serve`. Its first line is
`{"ok": true, "result": "ready"}` once the function imported, or `{"ok": false, "error": ...}`
(then it exits). Whatever else the process writes (print, logging, C code) goes to stderr, each line
prefixed with the function's name: stdout carries result lines only.

A batch line is {"prompts": [...], "completions": [...], "columns": {name: [...]}, "extras": {...}}:
extras holds TRL's other keywords (completion_ids, trainer_state as a dict, read as attributes).
The answer is {"ok": true, "result": [one item per completion], "logged": {"metrics": {name: [values]},
"extra": {column: [values]}}}, `logged` holding what the function passed to log_metric / log_extra.

Memory: the worker's address space may grow by at most MEMORY_MB over its size once the function
is loaded (RLIMIT_AS; 0 = no bound). A function that allocates past it gets a MemoryError (or
dies): that batch fails, the worker is started again, the run goes on.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import traceback
import types
from typing import Any, Callable, TextIO

from botgrpo_rewards.protocol.function_loader import (ContractError, FunctionLoadError, call_batch, first_line,
                                                       load_function)
from botgrpo_rewards.protocol.wire import DEFAULT_MEMORY_MB


def plain(item: Any) -> Any:
    """One returned item as JSON-able data: numbers (numpy and 0-d tensors too), None, dicts, or
    {"_bad": why} for anything else (that completion is answered bad_result)."""
    if item is None or isinstance(item, dict):
        return item
    if isinstance(item, (bool, int, float)):
        return float(item)
    if hasattr(item, "__float__") and not isinstance(item, (str, bytes)):
        try:
            return float(item)
        except (TypeError, ValueError):
            pass
    return {"_bad": f"returned {type(item).__name__} for a completion, not a number, None or a dict"}


def where_raised(err: BaseException) -> str:
    """' (file.py line N)' of the innermost frame, so the one error line points at the user's code."""
    frames = traceback.extract_tb(err.__traceback__)
    if not frames:
        return ""
    last = frames[-1]
    return f" ({os.path.basename(last.filename)} line {last.lineno})"


class Logged:
    """What a function hands to TRL's log_metric(name, value) and log_extra(column, values)."""

    def __init__(self) -> None:
        self.metrics: dict[str, list[float]] = {}
        self.extra: dict[str, list] = {}

    def log_metric(self, name: str, value: float) -> None:
        self.metrics.setdefault(str(name), []).append(float(value))

    def log_extra(self, column: str, values: list) -> None:
        self.extra.setdefault(str(column), []).extend(plain_value(v) for v in values)


def plain_value(value: Any) -> Any:
    """A log_extra value as a string or a number (what samples pages show)."""
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return value
    return str(value)


def trl_keywords(extras: dict, logged: Logged) -> dict[str, Any]:
    """TRL's keywords besides prompts, completions and the dataset's columns."""
    state = extras.get("trainer_state")
    return {"completion_ids": extras.get("completion_ids"),
            "trainer_state": types.SimpleNamespace(**state) if isinstance(state, dict) else None,
            "log_metric": logged.log_metric, "log_extra": logged.log_extra}


def handle(fn: Callable[..., Any], line: str) -> dict:
    try:
        batch = json.loads(line)
        logged = Logged()
        result = call_batch(fn, batch["prompts"], batch["completions"], batch.get("columns", {}),
                            trl_keywords(batch.get("extras") or {}, logged))
        return {"ok": True, "result": [plain(item) for item in result],
                "logged": {"metrics": logged.metrics, "extra": logged.extra}}
    except MemoryError:
        return {"ok": False, "error": "MemoryError: the function allocated past its memory bound "
                                      "(reward.function_memory_mb)"}
    except Exception as err:  # the user's bug costs this batch, never the worker
        return {"ok": False, "error": f"{type(err).__name__}: {first_line(err)}{where_raised(err)}",
                "contract": isinstance(err, ContractError)}


def _encode(msg: dict) -> str:
    try:
        return json.dumps(msg, ensure_ascii=True, allow_nan=True)
    except (TypeError, ValueError) as err:  # a metric or info value that is not JSON
        return json.dumps({"ok": False, "error": f"the function's result is not JSON-serialisable: {err}"})


class Relay:
    """Copies lines written on fds 1 and 2 (through a pipe) to the real stderr, each prefixed
    `[NAME] `; `drain()` returns once everything written before it has been copied, so a batch's
    output is in the log before its answer is sent."""

    def __init__(self, name: str):
        self.prefix = f"[{name}] ".encode()
        self.real_err = os.dup(2)
        self._marker = f"\0drained-{os.urandom(8).hex()}\n".encode()  # no user output holds it
        self._drained = threading.Event()
        read_end, write_end = os.pipe()
        os.dup2(write_end, 1)
        os.dup2(write_end, 2)
        os.close(write_end)
        threading.Thread(target=self._copy, args=(read_end,), name="output-relay", daemon=True).start()

    def _copy(self, source: int) -> None:
        with os.fdopen(source, "rb") as lines:
            for line in lines:
                drained = line.endswith(self._marker)
                line = line[:-len(self._marker)] if drained else line  # after an unfinished line of output
                if line:
                    os.write(self.real_err, self.prefix + (line if line.endswith(b"\n") else line + b"\n"))
                if drained:
                    self._drained.set()

    def drain(self, timeout_s: float = 5.0) -> None:
        sys.stderr.flush()
        self._drained.clear()
        os.write(2, self._marker)
        self._drained.wait(timeout_s)


def _protocol_stdout(name: str) -> tuple[TextIO, Relay]:
    """stdout for result lines only. Everything else the process writes on fds 1 and 2 (print,
    logging, warnings, C code, programs it starts) goes through the Relay to the real stderr, so a
    function's output reaches the run's log saying whose it is and never corrupts the protocol."""
    proto = os.fdopen(os.dup(1), "w", encoding="utf-8")
    relay = Relay(name)
    sys.stdout = sys.stderr = open(2, "w", encoding="utf-8", errors="replace", buffering=1, closefd=False)
    return proto, relay


def bound_memory(memory_mb: int) -> None:
    """RLIMIT_AS = this process's present size + memory_mb (module docstring); 0: no bound."""
    if memory_mb <= 0:
        return
    try:
        import resource

        with open("/proc/self/statm") as f:
            size = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        limit = size + memory_mb * 2**20
        hard = resource.getrlimit(resource.RLIMIT_AS)[1]
        resource.setrlimit(resource.RLIMIT_AS, (limit if hard == resource.RLIM_INFINITY else min(limit, hard), hard))
    except (OSError, ValueError, ImportError):  # not Linux: no bound (the docs say so)
        pass


def serve(load: Callable[[], Callable[..., Any]], name: str, memory_mb: int) -> int:
    """The worker's loop on fds 0 and 1 (module docstring); `load` returns the function."""
    out, relay = _protocol_stdout(name)
    try:
        fn = load()
    except FunctionLoadError as err:
        relay.drain()
        out.write(json.dumps({"ok": False, "error": str(err)}) + "\n")
        out.flush()
        return 1
    bound_memory(memory_mb)
    relay.drain()  # what importing it printed
    out.write('{"ok": true, "result": "ready"}\n')
    out.flush()
    for line in open(0, encoding="utf-8", closefd=False):
        if line.strip():
            answer = _encode(handle(fn, line))
            relay.drain()  # the batch's output first, then its answer
            out.write(answer + "\n")
            out.flush()
    return 0


def main() -> int:
    spec = sys.argv[1]
    name = sys.argv[2] if len(sys.argv) > 2 else spec.rpartition(":")[2]
    memory_mb = int(sys.argv[3]) if len(sys.argv) > 3 else DEFAULT_MEMORY_MB
    return serve(lambda: load_function(spec), name, memory_mb)


if __name__ == "__main__":
    sys.exit(main())
