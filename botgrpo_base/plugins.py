"""Named plugins: the one rule every botgrpo registry follows (tasks, reward services, advantage
estimators and policy losses).

Built-ins are named in code: a "module:attr" string, imported on first use, or the object itself
(a function registered by a decorator). Another package adds its own, without editing botgrpo, as
`NAME = "module:attr"` under the registry's entry-point group in its pyproject.toml. A plugin never
replaces a built-in: an entry point under a built-in's name is ignored. The entry points are read
once, when a name that is not built in (or the whole list) is first asked for: scanning every
installed package costs a good part of a second, which a built-in's start-up should not pay.
"""

from __future__ import annotations

import importlib
from typing import Any


class PluginImportError(ImportError):
    """A plugin (or built-in) named by a registry failed to import: the message says which."""


class Plugins:
    """name -> object for one kind of thing, by the rule above."""

    def __init__(self, kind: str, group: str | None, builtin: dict[str, Any] | None = None) -> None:
        self.kind = kind
        self.group = group
        self.builtin: dict[str, Any] = dict(builtin or {})
        self._entry_points: dict[str, str] | None = None

    def installed(self) -> dict[str, str]:
        """Other packages' entry points that are not built-in names: name -> "module:attr"."""
        if self._entry_points is None:
            from importlib.metadata import entry_points

            found = entry_points(group=self.group) if self.group else ()
            self._entry_points = {ep.name: ep.value for ep in found if ep.name not in self.builtin}
        return self._entry_points

    def forget(self) -> None:
        """Read the entry points again on next use (a plugin installed or removed meanwhile)."""
        self._entry_points = None

    def target(self, name: str) -> Any:
        """The built-in for `name`, else the plugin's "module:attr"; KeyError when neither exists."""
        if name in self.builtin:
            return self.builtin[name]
        return self.installed()[name]

    def __contains__(self, name: object) -> bool:
        return name in self.builtin or name in self.installed()

    def names(self) -> list[str]:
        return sorted(set(self.builtin) | set(self.installed()))

    def is_plugin(self, name: str) -> bool:
        return name not in self.builtin and name in self.installed()

    def load(self, name: str) -> Any:
        """The object `name` stands for, imported when it is a "module:attr" string. KeyError for an
        unknown name; PluginImportError (one line naming the plugin) when its import fails."""
        target = self.target(name)
        if not isinstance(target, str):
            return target
        try:
            return load_target(target)
        except Exception as err:  # the plugin's own bug: say which plugin, not a traceback
            where = "built in" if name in self.builtin else f"entry point group {self.group}"
            raise PluginImportError(f"{self.kind} {name!r} ({target}, {where}) failed to import: "
                                    f"{type(err).__name__}: {err}") from None


def load_target(target: str) -> Any:
    """The object a "module:attr" string names, its module imported."""
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)
