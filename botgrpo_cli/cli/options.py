"""CLI option types every command shares, defined once (help text, range, parsing). A command
picks its own default where it needs one (`threads: Threads = 2`)."""

from __future__ import annotations

import importlib
from typing import Annotated, Callable, TypeVar

import click
import typer
from typer.core import TyperCommand

from botgrpo_cli.errors import UserError

T = TypeVar("T")

Threads = Annotated[int, typer.Option("--threads", min=0, help="torch CPU threads per process; 0 = automatic "
                                      "(torch's default, or CPU cores / runs for runs in parallel).")]
Workers = Annotated[int, typer.Option("--workers", "-w", min=1, help="Reward service processes (per service).")]


def comma_list(text: str, option: str, parse: Callable[[str], T] = str, example: str = "a,b") -> list[T]:
    """'a, b,c' -> [parse('a'), parse('b'), parse('c')]; an empty list or an item `parse` rejects
    (ValueError) is one error naming the option."""
    items = [x.strip() for x in text.split(",") if x.strip()]
    if not items:
        raise UserError(f"{option} is empty; give a comma-separated list, e.g. {example}")
    try:
        return [parse(x) for x in items]
    except ValueError as err:
        raise UserError(f"{option} {text!r}: {err}; give a comma-separated list, e.g. {example}") from None


def positive_int(text: str) -> int:
    """An integer >= 1 (for comma lists of counts)."""
    if not text.isdigit() or int(text) < 1:
        raise ValueError(f"{text!r} is not a positive integer")
    return int(text)


def set_threads(threads: int) -> None:
    """torch's intra-op threads, unless 0 (keep torch's default)."""
    if threads:
        import torch

        torch.set_num_threads(threads)


# --------------------------------------------------------------------------------------------
# Choice lists in help, read from the registries (never written by hand, so never stale)

CHOICES = "{choices}"  # in a parameter's help: replaced by the names its registry holds
CONFIG_HELP = "{config}"  # in a parameter's help: replaced by the help of the config field it mirrors


def registry_names(where: str) -> list[str]:
    """The names in the registry at `where`, "module:attribute": a dict's keys, a sequence's items,
    or what a function returns, in the registry's own order."""
    module, _, attr = where.partition(":")
    registry = getattr(importlib.import_module(module), attr)
    return [str(name) for name in (registry() if callable(registry) else registry)]


def config_help(dotted: str) -> str:
    """The help text of config field SECTION.KEY (config.py declares it once)."""
    import dataclasses

    from botgrpo_cli import config

    section, key = dotted.split(".")
    field = {f.name: f for f in dataclasses.fields(config.Config.__dataclass_fields__[section].default_factory)}[key]
    return field.metadata["help"]


def listing_choices(mirrors: dict[str, str] | None = None, **registries: str) -> type[TyperCommand]:
    """A command class for `app.command(cls=...)`: in the help of the parameter called NAME, CHOICES
    becomes the names in `registries[NAME]` (see registry_names), comma-separated, and CONFIG_HELP
    the help of the config field `mirrors[NAME]` (SECTION.KEY). Both are read only when the help is
    shown: a registry may import torch, and `botgrpo --help` must not."""
    mirrors = mirrors or {}

    class ListingChoices(TyperCommand):
        def format_help(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
            for param in self.params:
                help_text = getattr(param, "help", None)
                if param.name in registries and help_text and CHOICES in help_text:
                    help_text = help_text.replace(CHOICES, ", ".join(registry_names(registries[param.name])))
                if param.name in mirrors and help_text and CONFIG_HELP in help_text:
                    help_text = help_text.replace(CONFIG_HELP, config_help(mirrors[param.name]))
                if help_text is not None:
                    param.help = help_text  # type: ignore[attr-defined]
            super().format_help(ctx, formatter)

    return ListingChoices
