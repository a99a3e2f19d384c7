"""A tiny name -> function registry used for advantage estimators and losses.

A registry given an entry-point group also finds functions other packages declare there (e.g.
`botgrpo.advantages`: `my_estimator = "my_package.module:function"`), imported on first use.
"""

from __future__ import annotations

import functools
import inspect
from typing import Callable, Generic, Iterator, TypeVar

from botgrpo_cli.algos.options import check_value, checked, rules
from botgrpo_cli.errors import UnknownName, UserError

F = TypeVar("F", bound=Callable)


@functools.lru_cache(maxsize=None)  # inspect.signature is slow and compute_advantages asks every step
def _keywords(fn: Callable, positional: int) -> tuple[str, ...]:
    params = list(inspect.signature(fn).parameters.values())[positional:]
    return tuple(p.name for p in params if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD))


class Registry(Generic[F]):
    """Maps names to functions; `@REG.register("name")` adds one, `REG["name"]` looks it up."""

    def __init__(self, kind: str, entry_point_group: str | None = None) -> None:
        self.kind = kind
        self._items: dict[str, F] = {}
        self._group = entry_point_group
        self._plugins: dict | None = None  # name -> EntryPoint, read once when first needed
        self._loaded: set[str] = set()  # names whose function came from a plugin

    def _plugin_points(self) -> dict:
        if self._plugins is None:
            found = {}
            if self._group:
                from importlib.metadata import entry_points

                found = {ep.name: ep for ep in entry_points(group=self._group)}
            self._plugins = found
        return self._plugins

    def _load_plugin(self, name: str) -> None:
        """Import a plugin's function the first time its name is used; a failing import is one line."""
        ep = self._plugin_points().get(name)
        if ep is None or name in self._items:
            return
        try:
            self._items[name] = checked(ep.load(), f"{self.kind} {name!r}")
            self._loaded.add(name)
        except Exception as err:  # the plugin's own bug: say which plugin, not a traceback
            raise UserError(f"{self.kind} {name!r} ({ep.value}, entry point group {self._group}) failed to "
                            f"import: {type(err).__name__}: {err}") from None

    def forget_plugins(self) -> None:
        """Drop what plugins added and read the entry points again on next use (an uninstalled plugin)."""
        for name in self._loaded:
            self._items.pop(name, None)
        self._loaded.clear()
        self._plugins = None

    def register(self, name: str) -> Callable[[F], F]:
        """Register `fn` under `name`; what comes back (and is registered) checks its declared
        options on every call (options.checked), so no function checks its own choices."""
        def add(fn: F) -> F:
            if name in self._items:
                raise ValueError(f"{self.kind} {name!r} is already registered")
            self._items[name] = checked(fn, f"{self.kind} {name!r}")
            return self._items[name]

        return add

    def __getitem__(self, name: str) -> F:
        if name not in self._items:
            self._load_plugin(name)
        try:
            return self._items[name]
        except KeyError:
            raise UnknownName(self.kind, name, self.names()) from None

    def __contains__(self, name: object) -> bool:
        return name in self._items or name in self._plugin_points()

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def names(self) -> list[str]:
        return sorted(set(self._items) | set(self._plugin_points()))

    def options(self, name: str, positional: int) -> list[str]:
        """The keyword options of `name` after its first `positional` (tensor) arguments."""
        return list(_keywords(self[name], positional))

    def check_options(self, name: str, options: dict, positional: int, user: bool = True) -> dict:
        """`options` typed and range-checked against `name`'s annotated signature (algos/options.py):
        UnknownName for an option it does not take, OptionError for a value outside its declared
        type or range (user=True: from a config, so trainer-computed tensors are refused too)."""
        known = self.options(name, positional)
        declared = rules(self[name])
        typed = {}
        for key, value in options.items():
            if key not in known:
                raise UnknownName(f"{self.kind} {name!r} option", key, known)
            typed[key] = (check_value(key, f"{self.kind} {name!r}", value, *declared[key], user=user)
                          if key in declared else value)
        return typed
