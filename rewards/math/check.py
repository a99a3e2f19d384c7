"""The jobs a worker process runs: compare an answer with the gold, judge step equalities."""

from __future__ import annotations

import sympy

from botgrpo_rewards.math.compare import answers_equal
from botgrpo_rewards.math.parse import ParseError, Parsed, parse

_PREC = 50


def check_answer(answer: str, gold: str, rel_tol: float = 0.0) -> tuple[bool, str]:
    """(correct, reason)."""
    return answers_equal(answer, gold, rel_tol)


def _closed(text: str) -> Parsed | None:
    try:
        return parse(text, allow_symbols=False)
    except (ParseError, ValueError, TypeError, ArithmeticError, RecursionError):
        return None


def equality_holds(left: str, right: str, head: str | None = None) -> bool | None:
    """True / False when both sides are closed-form numbers, None on any doubt.

    With a decimal on either side a step may round or truncate: it is false only when the sides
    differ by more than one unit in the last decimal place. A percent side stands for its value or
    its value / 100 ("0.1 = 10%" holds). A chain written as a running total ("3*4 = 12 + 5 = 17":
    `left` equals the leading term `head` of `right`) is not called false.
    """
    a, b = _closed(left), _closed(right)
    if a is None or b is None:
        return None
    try:
        if any(_close(x, y) for x in _forms(a) for y in _forms(b)):
            return True
    except (TypeError, ValueError, ArithmeticError):
        return None
    if head is not None and equality_holds(left, head) is True:
        return None
    if _whole_part(left, a, b):
        return None
    return False


def _whole_part(left: str, a: Parsed, b: Parsed) -> bool:
    """"100/3 = 33 batches": a division written with its whole part (floor or nearest) is how
    word problems count whole things, not a false equality."""
    if not ("/" in left or "÷" in left or "\\div" in left) or not b.value.is_Integer or not a.value.is_Rational:
        return False
    return b.value in (sympy.floor(a.value), sympy.ceiling(a.value))


def _forms(p: Parsed) -> list[tuple[sympy.Expr, int | None]]:
    """(value, decimal places it is written to): a percent is also value/100, two places finer."""
    if not p.percent:
        return [(p.value, p.decimals)]
    return [(p.value, p.decimals), (p.value / 100, (p.decimals or 0) + 2)]


def _close(left: tuple[sympy.Expr, int | None], right: tuple[sympy.Expr, int | None]) -> bool:
    (x, px), (y, py) = left, right
    diff = sympy.N(x - y, _PREC)
    if not diff.is_number or diff.has(sympy.nan, sympy.zoo, sympy.oo):
        raise ValueError("not a finite number")
    places = [p for p in (px, py) if p is not None]
    limit = sympy.Float(10) ** -min(places) if places else (1 + abs(sympy.N(y, _PREC))) * sympy.Float("1e-40", _PREC)
    return bool(abs(diff) <= limit)


def check_equations(items: list[tuple[str, str, str | None]]) -> list[bool | None]:
    """equality_holds for each (left, right, head)."""
    return [equality_holds(*item) for item in items]


JOBS = {"answer": check_answer, "equations": check_equations}
