"""Service names -> backend classes, imported lazily so each service loads only what it needs.

Other packages add services through the entry-point group `botgrpo.rewards` (a name -> a Backend
class, "package.module:Class"); the built-ins are listed here so a source checkout that was not
pip-installed still finds them.
"""

from __future__ import annotations

import importlib
from collections.abc import MutableMapping
from functools import cached_property
from importlib.metadata import entry_points
from typing import Iterator

ENTRY_POINT_GROUP = "botgrpo.rewards"

BUILTIN = {
    "math": "botgrpo_rewards.math.service:MathBackend",
    "react": "botgrpo_rewards.react.service:ReactBackend",
    "render": "botgrpo_rewards.render.service:RenderBackend",
    "function": "botgrpo_rewards.function.service:FunctionBackend",  # a user's Python function (--function)
}


class _Services(MutableMapping):
    """name -> "module:Class". Installed plugins are looked up only when a name is not built in or
    the whole list is asked for: scanning every installed package's entry points costs a good part
    of a second, which a built-in service's start-up should not pay. Names set here (a test's
    stand-in service) come first."""

    def __init__(self) -> None:
        self._set: dict[str, str] = {}

    def __getitem__(self, name: str) -> str:
        if name in self._set:
            return self._set[name]
        return BUILTIN[name] if name in BUILTIN else self._all[name]

    def __setitem__(self, name: str, target: str) -> None:
        self._set[name] = target

    def __delitem__(self, name: str) -> None:
        del self._set[name]

    def __contains__(self, name: object) -> bool:
        return name in self._set or name in BUILTIN or name in self._all

    def __iter__(self) -> Iterator[str]:
        return iter(dict.fromkeys([*self._all, *self._set]))

    def __len__(self) -> int:
        return len(set(self._all) | set(self._set))

    @cached_property
    def _all(self) -> dict[str, str]:
        found = dict(BUILTIN)
        for ep in entry_points(group=ENTRY_POINT_GROUP):
            found.setdefault(ep.name, ep.value)  # a plugin never replaces a built-in
        return found


SERVICES = _Services()

# Built-in tools for multi-turn rollouts (run.tools=[NAME]): NAME -> MODULE:FUNCTION, imported only in a
# tool worker process, as a service's package is only started by name.
TOOLS = {"calculator": "botgrpo_rewards.math.calculator:calculator"}


def load_backend(name: str, **kwargs):
    """Instantiate the backend called `name`. Raises KeyError naming the known services."""
    if name not in SERVICES:
        raise KeyError(f"unknown reward service {name!r}; known: {', '.join(sorted(SERVICES))}")
    module, _, cls = SERVICES[name].partition(":")
    return getattr(importlib.import_module(module), cls)(**kwargs)


def service_backend(name: str, function: str | None):
    """What to start: the name, or for `function` its backend with the user's function (the one
    service that takes a setting of its own at start). ValueError (one line) for a misuse."""
    if name != "function":
        if function is not None:
            raise ValueError(f"--function is the setting of service 'function', not of {name!r}")
        return name
    from botgrpo_rewards.function.service import FunctionBackend

    return FunctionBackend(function)
