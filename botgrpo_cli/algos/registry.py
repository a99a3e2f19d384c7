"""A tiny name -> function registry used for advantage estimators and losses."""

from __future__ import annotations

import inspect
from typing import Callable, Generic, Iterator, TypeVar

from botgrpo_cli.errors import UnknownName

F = TypeVar("F", bound=Callable)


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
        params = list(inspect.signature(self[name]).parameters.values())[positional:]
        return [p.name for p in params if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)]

    def check_options(self, name: str, options: dict, positional: int) -> None:
        """UnknownName for an option `name` does not take (before anything runs)."""
        known = self.options(name, positional)
        for key in options:
            if key not in known:
                raise UnknownName(f"{self.kind} {name!r} option", key, known)
