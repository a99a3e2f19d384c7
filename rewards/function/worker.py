"""The child process that runs a user's reward function: one JSON batch per stdin line, one
JSON result per stdout line (JSON both ways, never pickle).

Started by FunctionProcess (rewards/protocol/functions.py) as `python -m botgrpo_rewards.function.worker
SPEC [NAME [MEMORY_MB]]`, or forked from the caller for a Python callable (protocol/forked.py), both
running `serve`. Its first line is
`{"ok": true, "result": "ready"}` once the function imported, or `{"ok": false, "error": ...}`
(then it exits). Whatever the user's code prints goes to stderr, each line prefixed with the
function's name: stdout carries result lines only.

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
import traceback
import types
from typing import Any, Callable, TextIO

from botgrpo_rewards.function.loader import FunctionLoadError, call_batch, first_line, load_function
from botgrpo_rewards.protocol.functions import DEFAULT_MEMORY_MB


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
        return {"ok": False, "error": f"{type(err).__name__}: {first_line(err)}{where_raised(err)}"}


def _encode(msg: dict) -> str:
    try:
        return json.dumps(msg, ensure_ascii=True, allow_nan=True)
    except (TypeError, ValueError) as err:  # a metric or info value that is not JSON
        return json.dumps({"ok": False, "error": f"the function's result is not JSON-serialisable: {err}"})


class Prefixed:
    """A text stream that writes each line as `[NAME] line` to `out` (so a function's prints in the
    run's log say whose they are)."""

    def __init__(self, name: str, out: TextIO):
        self.name, self.out, self._start = name, out, True

    def write(self, text: str) -> int:
        for piece in text.splitlines(keepends=True):
            if self._start:
                self.out.write(f"[{self.name}] ")
            self.out.write(piece)
            self._start = piece.endswith("\n")
        self.out.flush()
        return len(text)

    def flush(self) -> None:
        self.out.flush()

    def isatty(self) -> bool:
        return False

    @property
    def encoding(self) -> str:
        return getattr(self.out, "encoding", "utf-8")


def _protocol_stdout(name: str) -> TextIO:
    """stdout for result lines only: fd 1 is pointed at stderr, so print() in user code (and C
    code writing to fd 1) cannot corrupt the protocol; Python's prints get the function's name."""
    proto = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    err = os.fdopen(os.dup(2), "w", encoding="utf-8", errors="replace")
    sys.stdout = sys.stderr = Prefixed(name, err)  # type: ignore[assignment]
    return proto


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
    out = _protocol_stdout(name)
    try:
        fn = load()
    except FunctionLoadError as err:
        out.write(json.dumps({"ok": False, "error": str(err)}) + "\n")
        out.flush()
        return 1
    bound_memory(memory_mb)
    out.write('{"ok": true, "result": "ready"}\n')
    out.flush()
    for line in open(0, encoding="utf-8", closefd=False):
        if line.strip():
            out.write(_encode(handle(fn, line)) + "\n")
            out.flush()
    return 0


def main() -> int:
    spec = sys.argv[1]
    name = sys.argv[2] if len(sys.argv) > 2 else spec.rpartition(":")[2]
    memory_mb = int(sys.argv[3]) if len(sys.argv) > 3 else DEFAULT_MEMORY_MB
    return serve(lambda: load_function(spec), name, memory_mb)


if __name__ == "__main__":
    sys.exit(main())
