"""The child process that runs tools: `python -m botgrpo_cli.turns.tool_worker MEMORY_MB MAX_CHARS SPEC...`, one JSON
call per stdin line ({"name", "arguments"}), one JSON answer per stdout line ({"ok": true, "result":
text} or {"ok": false, "error": text}); JSON both ways, never pickle. Its first line is
{"ok": true, "result": "ready"} once every tool imported, or {"ok": false, "error": ...} (then it exits).
What the tools print goes to stderr. A tool that hangs is the parent's to kill (tools.Toolbox).
Memory: once the tools are imported the process may grow by MEMORY_MB at most (RLIMIT_AS, the
reward functions' bound_memory; 0 = no bound): a tool that allocates past it gets a MemoryError,
which is an error for the model, and the worker goes on. A result longer than MAX_CHARS characters
(rollout.max_message_chars) is not sent: the answer is an error saying so ({"ok": false, "error":
..., "oversized": true}), so a 30 MB result never crosses the pipe nor waits in the trainer."""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import sys
from typing import Any, Callable, TextIO

from botgrpo_rewards.protocol import FunctionLoadError, bound_memory, first_line, load_function
from botgrpo_rewards.protocol import where_raised


def awaited(value: Any) -> Any:
    """An async function's result (TRL allows async tools, environment methods and get_reward)."""
    if inspect.isawaitable(value):
        async def wait() -> Any:
            return await value

        return asyncio.run(wait())
    return value


def as_text(result: Any) -> str:
    """A tool's return value as the message the model reads: strings as they are, else JSON (or str)."""
    if isinstance(result, str):
        return result
    try:
        return json.dumps(result, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(result)


def oversized(name: str, chars: int, max_chars: int) -> str:
    """Why a tool's result of `chars` characters is not put in the transcript."""
    return (f"the tool {name} returned {chars} characters, more than the {max_chars} a message may hold "
            "(rollout.max_message_chars); ask it for less")


def handle(tools: dict[str, Callable[..., Any]], line: str, max_chars: int | None = None) -> dict:
    try:
        call = json.loads(line)
        fn = tools[call["name"]]
        result = as_text(awaited(fn(**call["arguments"])))
        if max_chars is not None and len(result) > max_chars:
            return {"ok": False, "oversized": True, "error": oversized(call["name"], len(result), max_chars)}
        return {"ok": True, "result": result}
    except MemoryError:
        return {"ok": False, "error": "MemoryError: the tool allocated past its memory bound (rollout.tool_memory_mb)"}
    except Exception as err:  # the tool's bug (or a bad call) costs this call, never the worker
        return {"ok": False, "error": f"{type(err).__name__}: {first_line(err)}{where_raised(err)}"}


def _protocol_stdout() -> TextIO:
    """stdout for answer lines only: fd 1 now points at stderr, so what a tool prints cannot corrupt them."""
    proto = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return proto


def serve(load: Callable[[], dict[str, Callable[..., Any]]], memory_mb: int, max_chars: int) -> int:
    """The worker's loop on fds 0 and 1 (module docstring); `load` returns the tools by name. Run by
    main (a fresh interpreter importing specs) or in a fork of the trainer (tools.Toolbox: functions
    given from Python, inherited as they are)."""
    out = _protocol_stdout()
    try:
        tools = load()
    except FunctionLoadError as err:
        out.write(json.dumps({"ok": False, "error": str(err)}) + "\n")
        out.flush()
        return 1
    bound_memory(memory_mb)
    out.write('{"ok": true, "result": "ready"}\n')
    out.flush()
    for line in open(0, encoding="utf-8", closefd=False):
        if line.strip():
            out.write(json.dumps(handle(tools, line, max_chars), ensure_ascii=True) + "\n")
            out.flush()
    return 0


def main() -> int:
    specs = sys.argv[3:]
    return serve(lambda: {spec.rpartition(":")[2]: load_function(spec) for spec in specs},
                 int(sys.argv[1]), int(sys.argv[2]))


if __name__ == "__main__":
    sys.exit(main())
