"""botgrpo tasks: prompts, references, reward wiring and eval metrics.

Registering a task is one line: a built-in one in `_BUILTIN` below, one from another package in
that package's entry-point group `botgrpo.tasks` (NAME = "module:factory", the factory returning a
Task). Built-ins are not repeated as entry points, so a source checkout finds them without installing.
"""

from __future__ import annotations

from typing import Any

from botgrpo_base.plugins import Plugins
from botgrpo_tasks.base import Example, Task
from botgrpo_tasks.errors import UnknownTask

__all__ = ["TASKS", "Example", "Task", "get_task", "list_tasks"]

_BUILTIN = {  # name -> "module:factory"
    "react_synth": "botgrpo_tasks.react_synth:make_task",
    "arith_synth": "botgrpo_tasks.arith_synth:make_task",
    "react": "botgrpo_tasks.react:make_task",
    "aime": "botgrpo_tasks.aime:make_task",
    "prompts": "botgrpo_tasks.prompts:make_task",
}


TASKS = Plugins("task", "botgrpo.tasks", _BUILTIN)  # the one plugin rule: botgrpo_base/plugins.py


def list_tasks() -> list[str]:
    return TASKS.names()


def get_task(name: str, seed: int = 0, **options: Any) -> Task:
    """Construct the task called `name`. Unknown names raise UnknownTask (a KeyError) listing the known ones."""
    if name not in TASKS:
        raise UnknownTask(f"unknown task {name!r}; known tasks: {', '.join(TASKS.names())}")
    return TASKS.load(name)(seed=seed, **options)
