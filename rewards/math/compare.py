"""Is an answer equal to the gold? Runs inside a worker process (sympy work is time-limited there).

Policy (rewards/math/README.md lists each rule with its test):
- Values must be equal exactly: "033" == 33, "1,000" == 1000, "0.5" == "\\frac{1}{2}",
  "\\frac{1}{\\sqrt2}" == "\\frac{\\sqrt2}{2}". Undecided symbolic differences of closed forms are
  settled numerically at 50 digits (|diff| < 1e-40, relative).
- Decimals too: "0.333" != 1/3 and "6.28" != 2*pi, unless the request sets `rel_tol` (a dataset
  whose golds are rounded): then |a - b| <= rel_tol * max(|a|, |b|) passes.
- Percent: "v%" means v or v/100, whichever matches: gold "50%" accepts "50", "50\\%" and "0.5";
  gold 0.5 accepts "50\\%"; two percent values compare as they are.
- Expressions with variables (\\sec^2 y, x^2-1): equal when the difference vanishes at three fixed
  pseudo-random points (exact rationals, then 30 digits), never by expanding or simplifying.
- Shapes: unordered lists and sets compare as multisets (each other's kind); tuples and intervals
  in order with the same brackets; unions of intervals as sets of intervals.
- Text that is not in the grammar compares as normalized text (e.g. "(C)" vs "C").
"""

from __future__ import annotations

import random
import re
from functools import partial

import sympy

from botgrpo_rewards.math.answer import Shape, left_sides_differ, normalize, shape
from botgrpo_rewards.math.latex_fallback import parse_latex_number
from botgrpo_rewards.math.parse import ParseError, Parsed, TooBig, parse

_PREC = 50
_UNORDERED = {"list", "set"}


def values_equal(a: Parsed, b: Parsed, rel_tol: float = 0.0) -> bool:
    """Numeric/symbolic equality of answer `a` and gold `b` under the module's policy."""
    if a.percent and b.percent:
        return _equal(a.value, b.value, rel_tol)
    return any(_equal(x, y, rel_tol) for x in _percent_forms(a) for y in _percent_forms(b))


def _percent_forms(p: Parsed) -> list[sympy.Expr]:
    return [p.value, p.value / 100] if p.percent else [p.value]


def _equal(x: sympy.Expr, y: sympy.Expr, rel_tol: float) -> bool:
    if x.has(sympy.oo, -sympy.oo, sympy.zoo) or y.has(sympy.oo, -sympy.oo, sympy.zoo):
        return x == y
    if x.free_symbols or y.free_symbols:
        return _symbolic_equal(x, y)
    diff = x - y
    if diff == 0:
        return True
    err = abs(sympy.N(diff, _PREC))
    if rel_tol > 0:
        scale = max(abs(sympy.N(x, _PREC)), abs(sympy.N(y, _PREC)))
        return bool(err <= sympy.Float(rel_tol, _PREC) * scale)
    scale = 1 + abs(sympy.N(y, _PREC))
    return bool(err < scale * sympy.Float("1e-40", _PREC))


def _points(symbols: set) -> list[dict]:
    """Three fixed evaluation points: non-integer rationals (prime denominators), so simple roots
    such as x = 1 or x = 1/2 are never hit by chance."""
    rng = random.Random(0)
    ordered = sorted(symbols, key=str)
    return [{s: sympy.Rational(rng.randint(100, 999), rng.choice((97, 89, 83, 79))) for s in ordered} for _ in range(3)]


def _symbolic_equal(x: sympy.Expr, y: sympy.Expr) -> bool:
    diff = x - y
    if diff == 0:
        return True
    for point in _points(diff.free_symbols):
        value = sympy.N(diff.subs(point), 30)
        scale = 1 + abs(sympy.N(x.subs(point), 30))
        if not value.is_number or value.has(sympy.nan) or abs(value) > scale * sympy.Float("1e-20", 30):
            return False
    return True


def _parse_item(text: str) -> Parsed | str:
    """The parsed value, or the normalized text when it is outside the grammar."""
    try:
        return parse(text)
    except TooBig:
        raise
    except ParseError:
        pass
    if "\\" in text:
        try:
            return parse_latex_number(text)
        except ParseError:  # includes TooBig: the text then compares as text
            pass
    return re.sub(r"[\s{}()]", "", text).lower()


_CLOCK = re.compile(r"(\d{1,2}):([0-5]\d)(?::([0-5]\d))?\s*(?:([ap])\.?\s*m\.?)?", re.I)


def _clock(text: str) -> tuple[int, int, int, str] | None:
    """A clock time "3:05", "15:05:30", "3:05 PM" as (hour, minute, second, "a"/"p"/"")."""
    m = _CLOCK.fullmatch(text.strip())
    if not m or int(m.group(1)) > 24:
        return None
    return int(m.group(1)), int(m.group(2)), int(m.group(3) or 0), (m.group(4) or "").lower()


def _clocks_equal(a: tuple[int, int, int, str], b: tuple[int, int, int, str]) -> bool:
    """The same time of day; "3:00 PM" is 15:00, and a time without AM/PM matches either."""
    if a[3] and b[3]:
        return a == b
    if a[3] or b[3]:
        (h12, m12, s12, half), (h, m, sec, _) = (a, b) if a[3] else (b, a)
        return (m12, s12) == (m, sec) and (h % 12 == h12 % 12) and (h < 13 or half == "p")
    return a == b


def items_equal(a: str, b: str, rel_tol: float = 0.0) -> bool:
    """Two scalar item strings."""
    ca, cb = _clock(a), _clock(b)
    if ca and cb:
        return _clocks_equal(ca, cb)
    pa, pb = _parse_item(a), _parse_item(b)
    if isinstance(pa, str) or isinstance(pb, str):
        return _text(pa, a) == _text(pb, b)
    return values_equal(pa, pb, rel_tol)


def _text(p: Parsed | str, raw: str) -> str:
    return p if isinstance(p, str) else re.sub(r"[\s{}()]", "", raw).lower()


def shapes_equal(a: Shape, b: Shape, rel_tol: float = 0.0) -> bool:
    """Structured comparison (see the module docstring)."""
    items = partial(items_equal, rel_tol=rel_tol)
    if a.kind in _UNORDERED and b.kind in _UNORDERED:
        return _multiset_equal(list(a.items), list(b.items), items)
    if a.kind != b.kind or len(a.items) != len(b.items):
        return False
    if a.kind == "union":
        return _multiset_equal(list(a.items), list(b.items), partial(shapes_equal, rel_tol=rel_tol))
    if a.kind in ("relation", "equation"):
        return _relations_equal(a, b)
    if a.kind in ("interval", "matrix") and (a.left, a.right) != (b.left, b.right):
        return False
    return all(items(x, y) for x, y in zip(a.items, b.items))


def _relations_equal(a: Shape, b: Shape) -> bool:
    """Relations / equations are equal when `lhs - rhs` of one is a constant multiple of the other's:
    positive for inequalities after writing both with < or <= ("5 >= x" is "x <= 5", "-x > -1" is
    "x < 1"), any nonzero constant for = and != ("2x+4y-3=0" is "y = -x/2 + 3/4")."""
    (op_a, da), (op_b, db) = _oriented(a), _oriented(b)
    if op_a != op_b:
        return False
    if da is None or db is None:  # a side outside the grammar: the same text, side by side
        return [_text(x, x) for x in a.items] == [_text(y, y) for y in b.items]
    ratio = _constant_ratio(da, db)
    return ratio is not None and bool(ratio > 0 if op_a in ("<", "<=") else ratio != 0)


def _oriented(r: Shape) -> tuple[str, sympy.Expr | None]:
    op = r.left or "="
    lhs, rhs = (_parse_item(x) for x in r.items)
    if isinstance(lhs, str) or isinstance(rhs, str):
        return op, None
    if op in (">", ">="):
        return {">": "<", ">=": "<="}[op], rhs.value - lhs.value
    return op, lhs.value - rhs.value


def _constant_ratio(x: sympy.Expr, y: sympy.Expr) -> sympy.Expr | None:
    """x / y when it is the same nonzero number at three fixed points, else None."""
    ratio = None
    for point in _points(x.free_symbols | y.free_symbols):
        vx, vy = sympy.N(x.subs(point), 30), sympy.N(y.subs(point), 30)
        if not (vx.is_number and vy.is_number) or vy == 0 or vx == 0:
            return None
        r = vx / vy
        if not r.is_real or (ratio is not None and abs(r - ratio) > abs(ratio) * sympy.Float("1e-20", 30)):
            return None
        ratio = r
    return ratio


def _multiset_equal(xs: list, ys: list, eq) -> bool:
    if len(xs) != len(ys):
        return False
    remaining = list(ys)
    for x in xs:
        for i, y in enumerate(remaining):
            if eq(x, y):
                del remaining[i]
                break
        else:
            return False
    return True


def _same_text(answer: str, gold: str) -> bool:
    a, g = (re.sub(r"[\s{}]", "", normalize(t)) for t in (answer, gold))
    return bool(a) and a == g


def answers_equal(answer: str, gold: str, rel_tol: float = 0.0) -> tuple[bool, str]:
    """(correct, reason) for an extracted answer against the gold answer string."""
    if left_sides_differ(answer, gold):
        return False, "the left sides name different functions"
    if _same_text(answer, gold):  # "n!" is "n!" even where its value is past the parser's caps
        return True, "the same text"
    try:
        expected = shape(gold, gold=True)
        ok = shapes_equal(shape(answer, keep_equation=expected.kind == "equation"), expected, rel_tol)
    except TooBig as err:
        return False, f"answer refused: {err}"
    except (ValueError, TypeError, ArithmeticError, RecursionError) as err:
        return False, f"could not compare: {err}"
    return ok, "equal" if ok else "not equal"
