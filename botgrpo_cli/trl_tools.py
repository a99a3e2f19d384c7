"""TRL's `GRPOTrainer(tools=[fn, ...])` on botgrpo's multi-turn engine: each function becomes the
run.tools spec its worker processes import (docs/multi-turn.md).

Tools run in worker processes started from a spec, never from a pickled object: a function from a
package is `MODULE:NAME`, one from a top-level module (my_tools.py beside the script) `my_tools.py:NAME`
(the workers need not have its folder on sys.path); one defined in the script being run is `script.py:NAME`, which the workers
import as a module of their own, so the script must keep its training under
`if __name__ == "__main__":` (else each worker would start the training again).
"""

from __future__ import annotations

import inspect
import re
import sys
from pathlib import Path
from typing import Any, Callable

from botgrpo_cli.config import Config
from botgrpo_cli.errors import UserError

_MAIN_GUARD = re.compile(r"""^if\s+__name__\s*==\s*['"]__main__['"]\s*:""", re.MULTILINE)


def tool_spec(fn: Any) -> str:
    """The run.tools spec of a tool given as a function (a string is a spec already)."""
    if isinstance(fn, str):
        return fn
    if not inspect.isfunction(fn):
        raise UserError(f"tools: {fn!r} is not a plain function; a tool is a function with type hints and a "
                        "docstring (a method or a callable object cannot be imported by the tool workers)")
    name, module = fn.__name__, fn.__module__
    if "<" in fn.__qualname__:
        raise UserError(f"tools: {name} is defined inside a function or is a lambda; the tool workers import "
                        "tools by name: define it at the top of a module")
    if module != "__main__":
        path = getattr(sys.modules.get(module), "__file__", None) or ""
        # a top-level module (my_tools.py beside the script) by its file: the workers' sys.path need not hold its folder
        return f"{Path(path).resolve()}:{name}" if "." not in module and path.endswith(".py") else f"{module}:{name}"
    script = getattr(sys.modules["__main__"], "__file__", None)
    if script is None or not Path(script).is_file():
        raise UserError(f"tools: {name} is defined in an interactive session; the tool workers import tools by "
                        "name: put it in a module (my_tools.py) and pass my_tools.{name}")
    if not _MAIN_GUARD.search(Path(script).read_text(errors="replace")):
        raise UserError(f"tools: {name} is defined in {script}, which the tool workers import; put the training under "
                        "`if __name__ == \"__main__\":` there (or the tools in a module of their own)")
    return f"{Path(script).resolve()}:{name}"


def tool_specs(cfg: Config, tools: list[Callable[..., Any] | str]) -> None:
    """Trainer(tools=...) -> run.tools (refused beside tools the Config names already)."""
    if cfg.run.tools:
        raise UserError("tools=[...] and args run.tools both name the tools: give one")
    cfg.run.tools = [tool_spec(fn) for fn in tools]
