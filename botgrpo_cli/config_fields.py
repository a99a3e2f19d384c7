"""How a config field is declared (its help text and allowed values as metadata): shared by
config.py, which declares the fields, and config_checks.py, which checks them."""

from __future__ import annotations

import dataclasses
from dataclasses import field
from typing import Any, Callable


def opt(default: Any, help: str, choices: tuple | Callable[[], list[str]] | None = None) -> Any:
    """A dataclass field with its help text (and allowed values, or a function returning a
    registry's names) attached as metadata."""
    meta = {"help": help, "choices": choices}
    if isinstance(default, (dict, list)):
        return field(default_factory=lambda: type(default)(default), metadata=meta)
    return field(default=default, metadata=meta)


def choices_of(f: dataclasses.Field) -> list[str] | None:
    """A field's allowed values (a registry's names are read when asked)."""
    choices = f.metadata["choices"]
    return list(choices()) if callable(choices) else (list(choices) if choices else None)
