"""A tiny name -> function registry used for advantage estimators and losses.

A registry given an entry-point group also finds functions other packages declare there (e.g.
`botgrpo.advantages`: `my_estimator = "my_package.module:function"`), imported on first use, by
the rule every botgrpo registry follows (botgrpo_base/plugins.py): a plugin never
replaces a built-in.
"""

from __future__ import annotations

import functools
import inspect
from typing import Callable, Generic, Iterator, TypeVar

from botgrpo_base.plugins import PluginImportError, Plugins
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
        self._plugins = Plugins(kind, entry_point_group)  # built-ins are what register() adds
        self._loaded: dict[str, F] = {}  # plugins imported so far, checked like built-ins

    def forget_plugins(self) -> None:
        """Drop what plugins added and read the entry points again on next use (an uninstalled plugin)."""
        self._loaded.clear()
        self._plugins.forget()

    def register(self, name: str) -> Callable[[F], F]:
        """Register `fn` under `name`; what comes back (and is registered) checks its declared
        options on every call (options.checked), so no function checks its own choices."""
        def add(fn: F) -> F:
            if name in self._plugins.builtin:
                raise ValueError(f"{self.kind} {name!r} is already registered")
            self._plugins.builtin[name] = checked(fn, f"{self.kind} {name!r}")
            return self._plugins.builtin[name]

        return add

    def __getitem__(self, name: str) -> F:
        if name in self._plugins.builtin:
            return self._plugins.builtin[name]
        if name not in self._loaded:
            try:
                self._loaded[name] = checked(self._plugins.load(name), f"{self.kind} {name!r}")
            except KeyError:
                raise UnknownName(self.kind, name, self.names()) from None
            except PluginImportError as err:
                raise UserError(str(err)) from None
        return self._loaded[name]

    def __contains__(self, name: object) -> bool:
        return name in self._plugins

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def names(self) -> list[str]:
        return self._plugins.names()

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
