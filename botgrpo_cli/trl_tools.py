"""TRL's `GRPOTrainer(tools=[fn, ...])` on botgrpo's multi-turn engine: each function becomes a
run.tools entry (docs/multi-turn.md).

A function that can be imported by name stays a spec its worker processes import in a fresh
interpreter: `MODULE:NAME` from a package, `my_tools.py:NAME` from a top-level module beside the
script (the workers need not have its folder on sys.path). One that cannot (defined in the script
being run, with or without `if __name__ == "__main__":`, in an interactive session, or inside a
function) is kept as the function itself: the tool workers are then forks of the trainer that
inherit it (turns/tools.py), as reward functions given from Python run, so nothing imports the
script again and its training is not started twice.
"""

from __future__ import annotations

import inspect
import sys
from pathlib import Path
from typing import Any, Callable

from botgrpo_cli.config import Config
from botgrpo_cli.errors import UserError


def tool_spec(fn: Any) -> str | Callable[..., Any]:
    """The run.tools entry of a tool: a string as it is; a function by its spec where the workers can
    import it by name, else the function itself (run in forked workers)."""
    if isinstance(fn, str):
        return fn
    if not inspect.isfunction(fn):
        raise UserError(f"tools: {fn!r} is not a plain function; a tool is a function with type hints and a "
                        "docstring (wrap a method or a callable object in one)")
    name, module = fn.__name__, fn.__module__
    if module == "__main__" or "<" in fn.__qualname__:  # not importable by name: forked workers inherit it
        return fn
    path = getattr(sys.modules.get(module), "__file__", None) or ""
    # a top-level module (my_tools.py beside the script) by its file: the workers' sys.path need not hold its folder
    return f"{Path(path).resolve()}:{name}" if "." not in module and path.endswith(".py") else f"{module}:{name}"


def tool_specs(cfg: Config, tools: list[Callable[..., Any] | str]) -> None:
    """Trainer(tools=...) -> run.tools (refused beside tools the Config names already)."""
    if cfg.run.tools:
        raise UserError("tools=[...] and args run.tools both name the tools: give one")
    cfg.run.tools = [tool_spec(fn) for fn in tools]
