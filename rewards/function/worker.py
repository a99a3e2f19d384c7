"""The child process that runs a user's reward function: one JSON batch per stdin line, one
JSON result per stdout line (JSON both ways, never pickle).

Started by service.py as `python -m botgrpo_rewards.function.worker SPEC`. Its first line is
`{"ok": true, "result": "ready"}` once the function imported, or `{"ok": false, "error": ...}`
(then it exits). Whatever the user's code prints goes to stderr: stdout carries result lines only.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from typing import Any, Callable, TextIO

from botgrpo_rewards.function.loader import FunctionLoadError, call_batch, first_line, load_function


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


def handle(fn: Callable[..., Any], line: str) -> dict:
    try:
        batch = json.loads(line)
        result = call_batch(fn, batch["prompts"], batch["completions"], batch.get("columns", {}))
        return {"ok": True, "result": [plain(item) for item in result]}
    except Exception as err:  # the user's bug costs this batch, never the worker
        return {"ok": False, "error": f"{type(err).__name__}: {first_line(err)}{where_raised(err)}"}


def _encode(msg: dict) -> str:
    try:
        return json.dumps(msg, ensure_ascii=True)
    except (TypeError, ValueError) as err:  # a metric or info value that is not JSON
        return json.dumps({"ok": False, "error": f"the function's result is not JSON-serialisable: {err}"})


def _protocol_stdout() -> TextIO:
    """stdout for result lines only: fd 1 is pointed at stderr, so print() in user code (and C
    code writing to fd 1) cannot corrupt the protocol."""
    proto = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return proto


def main() -> int:
    out = _protocol_stdout()
    try:
        fn = load_function(sys.argv[1])
    except FunctionLoadError as err:
        out.write(json.dumps({"ok": False, "error": str(err)}) + "\n")
        out.flush()
        return 1
    out.write('{"ok": true, "result": "ready"}\n')
    out.flush()
    for line in sys.stdin:
        if line.strip():
            out.write(_encode(handle(fn, line)) + "\n")
            out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
