"""Service names -> backend classes, imported lazily so each service loads only what it needs.

Other packages add services through the entry-point group `botgrpo.rewards` (a name -> a Backend
class, "package.module:Class"); the built-ins are listed here so a source checkout that was not
pip-installed still finds them. The rule for both is the one every registry follows
(botgrpo_base/plugins.py): a plugin never replaces a built-in.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Iterator

from botgrpo_rewards.protocol import Plugins, load_target

ENTRY_POINT_GROUP = "botgrpo.rewards"

BUILTIN = {
    "math": "botgrpo_rewards.math.service:MathBackend",
    "react": "botgrpo_rewards.react.service:ReactBackend",
    "render": "botgrpo_rewards.render.service:RenderBackend",
    "function": "botgrpo_rewards.function.service:FunctionBackend",  # a user's Python function (--function)
}


class _Services(MutableMapping):
    """name -> "module:Class", by the plugin rule; names set here (a test's stand-in service) come first."""

    def __init__(self) -> None:
        self._set: dict[str, str] = {}
        self._plugins = Plugins("reward service", ENTRY_POINT_GROUP, BUILTIN)

    def __getitem__(self, name: str) -> str:
        return self._set[name] if name in self._set else self._plugins.target(name)

    def __setitem__(self, name: str, target: str) -> None:
        self._set[name] = target

    def __delitem__(self, name: str) -> None:
        del self._set[name]

    def __contains__(self, name: object) -> bool:
        return name in self._set or name in self._plugins

    def __iter__(self) -> Iterator[str]:
        return iter(dict.fromkeys([*self._plugins.names(), *self._set]))

    def __len__(self) -> int:
        return len(set(self._plugins.names()) | set(self._set))

    def forget(self) -> None:
        """Read the entry points again on next use (a plugin installed or removed meanwhile)."""
        self._plugins.forget()


SERVICES = _Services()

# Built-in tools for multi-turn rollouts (run.tools=[NAME]): NAME -> MODULE:FUNCTION, imported only in a
# tool worker process, as a service's package is only started by name.
TOOLS = {"calculator": "botgrpo_rewards.math.calculator:calculator"}


class UnknownService(KeyError, ValueError):
    """A name no installed reward service has: one line naming the known ones. A KeyError (a lookup)
    and a ValueError (a usage mistake), so callers of either kind catch it."""

    __str__ = Exception.__str__  # the message itself, not KeyError's quoted repr


def check_service(name: str) -> None:
    """The one check of a service name, for every command and entry point that takes one."""
    if name not in SERVICES:
        raise UnknownService(f"unknown reward service {name!r}; known: {', '.join(sorted(SERVICES))}")


def load_backend(name: str, **kwargs):
    """Instantiate the backend called `name`. Raises UnknownService (a KeyError) naming the known services."""
    check_service(name)
    return load_target(SERVICES[name])(**kwargs)


def service_backend(name: str, function: str | None):
    """What to start: the name, or for `function` its backend with the user's function (the one
    service that takes a setting of its own at start). ValueError (one line) for a misuse."""
    if name != "function":
        if function is not None:
            raise ValueError(f"--function is the setting of service 'function', not of {name!r}")
        return name
    from botgrpo_rewards.function.service import FunctionBackend

    return FunctionBackend(function)
