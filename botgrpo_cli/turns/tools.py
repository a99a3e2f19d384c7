"""Tools (`run.tools`): plain Python functions with type hints and a docstring, offered to the model
through its chat template's tool schemas, run in worker processes with a deadline.

A spec is `path/to/file.py:NAME`, `MODULE:NAME`, or a built-in's name (`calculator`). The functions
are imported here once (to read their schemas: transformers' get_json_schema, as TRL does) and in
each worker. A function given from Python that cannot be imported by name (Trainer(tools=[fn]) with
one defined in the script being run, guarded by `if __name__ == "__main__":` or not: trl_tools.py)
is given as itself: when the run has one, each worker is a fork of this process that inherits the
functions as they are (rewards/protocol/forked.py, as for reward functions given from Python).
A call that hangs past `deadline_s` (its worker is killed and started again), raises, names no
known tool, passes arguments the function does not take or allocates past `memory_mb`
(rollout.tool_memory_mb, RLIMIT_AS as for reward functions) or returns more than `max_chars`
characters (rollout.max_message_chars) comes back as an error text for the model, and is counted:
never the run's end.
"""

from __future__ import annotations

import json
import queue
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable

from botgrpo_cli.errors import UserError
from botgrpo_cli.turns.tool_calls import ToolCall
from botgrpo_rewards.protocol import (DEFAULT_MEMORY_MB, ChildExited, FunctionLoadError, LineChild, absolute_spec, is_ready_line,
                                      load_function, ready_child, split_spec)
from botgrpo_rewards.registry import TOOLS

BUILT_IN = TOOLS  # built-in tools by name; each is imported by a tool worker, never here
MAX_MESSAGE_CHARS = 100_000  # rollout.max_message_chars: ~25k tokens, more than a real context has room for


@dataclass(frozen=True)
class ToolResult:
    name: str
    content: str  # what the model reads: the tool's result, or the error
    error: str | None = None  # "error" (raised / bad call), "timeout", "died" or "oversized" (a result past
    # rollout.max_message_chars); None when the tool answered


def resolve_spec(spec: str) -> str:
    """A run.tools entry -> an absolute MODULE:NAME / FILE.py:NAME spec (UserError when it is neither)."""
    if not isinstance(spec, str) or not spec:
        raise UserError(f"run.tools entries are FILE.py:NAME, MODULE:NAME or a built-in ({', '.join(BUILT_IN)}); "
                        f"got {spec!r}")
    if spec in BUILT_IN:
        return BUILT_IN[spec]
    try:
        split_spec(spec)
        return absolute_spec(spec)
    except FunctionLoadError as err:
        raise UserError(_as_tool(err)) from None


def _as_tool(err: Exception) -> str:
    return str(err).replace("reward function", "tool", 1)


def tool_schema(fn: Callable[..., Any], spec: str) -> dict:
    """The function's JSON schema for the chat template; UserError saying what to add when it has none."""
    from transformers.utils import get_json_schema  # transformers is heavy: only where schemas are made

    try:
        return get_json_schema(fn)
    except Exception as err:  # transformers' DocstringParsingException / TypeHintParsingException
        raise UserError(f"tool {spec}: {err} (a tool needs type hints on every argument and a docstring "
                        f"with an Args: section describing each)") from None


class Toolbox:
    """The run's tools: schemas for the template, and `run(calls)` through `workers` worker processes."""

    def __init__(self, specs: list[str | Callable[..., Any]], workers: int = 2, deadline_s: float = 10.0,
                 memory_mb: int = DEFAULT_MEMORY_MB, max_chars: int = MAX_MESSAGE_CHARS):
        if not specs:
            raise UserError("run.tools is empty: name at least one tool, or leave it unset")
        self.specs = [s if callable(s) else resolve_spec(s) for s in specs]
        self.forked = any(callable(s) for s in self.specs)  # workers are forks: see the module docstring
        self.functions: dict[str, Callable[..., Any]] = {}
        for spec in self.specs:
            try:
                fn = spec if callable(spec) else load_function(spec)
            except FunctionLoadError as err:
                raise UserError(_as_tool(err)) from None
            name = fn.__name__ if callable(spec) else split_spec(spec)[1]
            if name in self.functions:
                raise UserError(f"run.tools names two tools called {name!r}; tool names must be unique")
            self.functions[name] = fn
        self.schemas = [tool_schema(fn, spec if isinstance(spec, str) else name)
                        for spec, (name, fn) in zip(self.specs, self.functions.items())]
        self.deadline_s, self.n_workers, self.memory_mb = deadline_s, max(1, workers), memory_mb
        self.max_chars = max_chars  # longest result sent back (rollout.max_message_chars)
        self._free: queue.Queue[Any] = queue.Queue()
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        self.stats = {"calls": 0, "errors": 0, "timeouts": 0, "restarts": 0}

    # ---------------------------------------------------------------- workers

    def _spawn(self) -> Any:
        if self.forked:
            from botgrpo_cli.turns.tool_worker import serve
            from botgrpo_rewards.protocol import ForkedChild

            functions, memory_mb, max_chars = dict(self.functions), self.memory_mb, self.max_chars
            child: Any = ForkedChild(lambda: serve(lambda: functions, memory_mb, max_chars), "tool-worker")
        else:
            child = LineChild([sys.executable, "-m", "botgrpo_cli.turns.tool_worker", str(self.memory_mb),
                               str(self.max_chars), *self.specs], "tool-worker",
                              ready=is_ready_line, stderr="inherit")
        try:
            return ready_child(child, "the tool worker")
        except RuntimeError as err:
            raise UserError(_as_tool(err)) from None

    def start(self) -> "Toolbox":
        if self._pool is None:
            for _ in range(self.n_workers):
                self._free.put(self._spawn())
            self._pool = ThreadPoolExecutor(self.n_workers, thread_name_prefix="tool-call")
        return self

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
        while not self._free.empty():
            self._free.get().kill()

    def __enter__(self) -> "Toolbox":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ---------------------------------------------------------------- calls

    def run(self, calls: list[ToolCall]) -> list[ToolResult]:
        """The results of `calls`, in order (run side by side on the workers)."""
        self.start()
        assert self._pool is not None
        results = list(self._pool.map(self._one, calls))
        with self._lock:
            self.stats["calls"] += len(results)
            self.stats["errors"] += sum(r.error is not None for r in results)
            self.stats["timeouts"] += sum(r.error == "timeout" for r in results)
        return results

    def _one(self, call: ToolCall) -> ToolResult:
        if call.error is not None:
            return ToolResult(call.name, f"Error: {call.error}", "error")
        if call.name not in self.functions:
            return ToolResult(call.name, f"Error: there is no tool {call.name!r}; the tools are "
                                         f"{', '.join(self.functions)}", "error")
        child = self._free.get()  # a worker of our own for this call
        try:
            if not child.send(json.dumps({"name": call.name, "arguments": call.arguments}, ensure_ascii=True)):
                raise ChildExited("gone")
            reply = child.receive(self.deadline_s)
        except ChildExited:
            self._free.put(self._replace(child))
            return ToolResult(call.name, f"Error: the tool {call.name} crashed its process", "died")
        if reply is None:  # it hangs (or is slow): a fresh worker serves the next call
            self._free.put(self._replace(child))
            return ToolResult(call.name, f"Error: the tool {call.name} did not answer within {self.deadline_s:g} s",
                              "timeout")
        self._free.put(child)
        msg = json.loads(reply)
        if not msg.get("ok"):
            return ToolResult(call.name, f"Error: {msg.get('error')}", "oversized" if msg.get("oversized") else "error")
        return ToolResult(call.name, str(msg.get("result")))

    def _replace(self, child: Any) -> Any:
        child.kill()
        with self._lock:
            self.stats["restarts"] += 1
        return self._spawn()
