"""botgrpo tasks: prompts, references, reward wiring and eval metrics.

Registering a task is one line: a built-in one in `_BUILTIN` below, one from another package in
that package's entry-point group `botgrpo.tasks` (NAME = "module:factory", the factory returning a
Task). Built-ins are not repeated as entry points, so a source checkout finds them without installing.
"""

from __future__ import annotations

from importlib.metadata import entry_points
from typing import Any

from botgrpo_tasks.base import Example, Task
from botgrpo_tasks.errors import UnknownTask

__all__ = ["Example", "Task", "get_task", "list_tasks"]

_BUILTIN = {  # name -> "module:factory"
    "react_synth": "botgrpo_tasks.react_synth:make_task",
    "arith_synth": "botgrpo_tasks.arith_synth:make_task",
    "react": "botgrpo_tasks.react:make_task",
    "aime": "botgrpo_tasks.aime:make_task",
    "prompts": "botgrpo_tasks.prompts:make_task",
}


def _factories() -> dict[str, Any]:
    """Built-ins, then other packages' entry points (an installed package cannot shadow a built-in)."""
    found: dict[str, Any] = {ep.name: ep for ep in entry_points(group="botgrpo.tasks")}
    return {**found, **_BUILTIN}


def list_tasks() -> list[str]:
    return sorted(_factories())


def get_task(name: str, seed: int = 0, **options: Any) -> Task:
    """Construct the task called `name`. Unknown names raise UnknownTask (a KeyError) listing the known ones."""
    factories = _factories()
    if name not in factories:
        raise UnknownTask(f"unknown task {name!r}; known tasks: {', '.join(sorted(factories))}")
    target = factories[name]
    if isinstance(target, str):
        import importlib

        module, _, attr = target.partition(":")
        factory = getattr(importlib.import_module(module), attr)
    else:
        factory = target.load()
    return factory(seed=seed, **options)
