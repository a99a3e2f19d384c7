"""CLI option types every command shares, defined once (help text, range, parsing). A command
picks its own default where it needs one (`threads: Threads = 2`)."""

from __future__ import annotations

from typing import Annotated, Callable, TypeVar

import typer

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
