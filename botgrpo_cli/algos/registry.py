"""A tiny name -> function registry used for advantage estimators and losses."""

from __future__ import annotations

import functools
import inspect
from typing import Callable, Generic, Iterator, TypeVar

from botgrpo_cli.algos.options import check_value, rules
from botgrpo_cli.errors import UnknownName

F = TypeVar("F", bound=Callable)


@functools.lru_cache(maxsize=None)  # inspect.signature is slow and compute_advantages asks every step
def _keywords(fn: Callable, positional: int) -> tuple[str, ...]:
    params = list(inspect.signature(fn).parameters.values())[positional:]
    return tuple(p.name for p in params if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD))


class Registry(Generic[F]):
    """Maps names to functions; `@REG.register("name")` adds one, `REG["name"]` looks it up."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._items: dict[str, F] = {}

    def register(self, name: str) -> Callable[[F], F]:
        def add(fn: F) -> F:
            if name in self._items:
                raise ValueError(f"{self.kind} {name!r} is already registered")
            self._items[name] = fn
            return fn

        return add

    def __getitem__(self, name: str) -> F:
        try:
            return self._items[name]
        except KeyError:
            raise UnknownName(self.kind, name, sorted(self._items)) from None

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._items))

    def names(self) -> list[str]:
        return sorted(self._items)

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
