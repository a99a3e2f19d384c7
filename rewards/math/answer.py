"""Normalize an answer string and find its shape: scalar, unordered list, set, tuple, interval, union.

Pure string work (no sympy): wrappers ($, \\left, spacing, \\text units, degrees, currency) go,
a left-hand side goes (`x = 5`, `m+n=47`, `(x, y) = (2, 5)` keep what follows the last `=`),
"1,000.99", "1{,}000" and "1,\\!000" become plain numbers, `\\pm` becomes two roots, and top-level
commas split the items.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from botgrpo_rewards.math.matrices import combine

_DROP = [r"\$", r"\\\(", r"\\\)", r"\\\[", r"\\\]", r"\\displaystyle", r"\\left", r"\\right", r"(?<!\\)\\!",
         r"(?<!\\)\\,", r"(?<!\\)\\;", r"(?<!\\)\\:", r"(?<!\\)\\ ", "~", r"\^\{?\\circ\}?", r"\\circ", r"\\degree", "°", r"\{,\}", r"\{\s*,\s*\}",
         r"\\\$", "€", "£", "¥", r"\\euro", r"\\pounds"]
_DROP_RE = re.compile("|".join(_DROP))
_WRAP = re.compile(r"\\(?:text|textbf|textrm|textnormal|textit|textup|mathrm|mathbf|mathit|mathsf|mbox|operatorname)"
                   r"\s*\{([^{}]*)\}")
_THOUSANDS = re.compile(r"(?<![\d.,])\d{1,3}(?:,\d{3})+(?=\.\d|,\s|(?![\d,.]))")
_SPACED_THOUSANDS = re.compile(r"-?\d{1,3}(?: \d{3})+(?:\.\d+)?")
_PERCENT_WORD = re.compile(r"\s*(?:percent(?:age)?|pct)\.?\s*$", re.I)
_PM = re.compile(r"\\pm|±")
# "(5,250)" is a pair: inside brackets a comma before three digits is a thousands separator only
# when items are written with ", " ("[1,000, 2,000]").
# "1 1/2" is the mixed number 3/2 (a whole number, a space, a proper fraction), not 11/2.
_MIXED = re.compile(r"(?<![\d./^_{])(-?)(\d+) (\d+)/(\d+)(?![\d./])")
_ORDINAL = re.compile(r"(?<=\d)\s*(?:\^\s*\{\s*(?:st|nd|rd|th)\s*\}|\^(?:st|nd|rd|th)|(?:st|nd|rd|th))(?![A-Za-z])")
_TRIG = re.compile(r"\\(?:sin|cos|tan|cot|sec|csc)(?![A-Za-z])")
_DEGREES = re.compile(r"(\d+(?:\.\d+)?)\s*(?:\^\s*\{?\s*\\circ\s*\}?|°|\\degree)")
# "3 million": a magnitude word multiplies (it is not a unit to drop).
_MAGNITUDES = {"thousand": 3, "million": 6, "billion": 9, "trillion": 12}
_LHS = re.compile(r"^\s*(?:\\?[A-Za-z]+(?:_\{?\w+\}?)?|[A-Za-z]\([A-Za-z]\))\s*(?:=|\\in)\s*")
_MEMBER = re.compile(r"^\s*[A-Za-z]\s*\\in\s*")
_CONNECTIVE = re.compile(r"\s+(?:and|or)\s+|\\quad|\\qquad", re.I)
_UNITS = {
    "m", "cm", "mm", "km", "g", "kg", "mg", "s", "ms", "h", "hr", "hrs", "min", "mins", "ft", "in",
    "yd", "mi", "l", "ml", "mph", "kph", "sq", "cu",
}
_NOT_UNITS = {"sqrt", "pi", "frac", "dfrac", "infty", "cdot", "times", "div"}
_TRAIL_WORD = re.compile(r"(?<=[\d)}\s.])\s*([A-Za-z]+)\.?(?:\s*\^\{?[23]\}?)?\s*$")


@dataclass(frozen=True)
class Shape:
    """An answer's structure (the kinds are listed on `kind`)."""

    kind: str  # scalar | list | set | tuple | interval | union | matrix | relation | equation
    items: tuple  # item strings, Shapes (union), matrix cells row by row, a relation's or equation's sides
    left: str = ""  # interval bracket '[' / '(', a matrix's "rows x cols", a relation's operator
    right: str = ""


# "\\\\frac" written with a doubled backslash (text escaped twice, as JSON dumps and test files
# carry it) is the command: a TeX line break followed by the letters "frac" is never an answer.
_DOUBLED = re.compile(r"(?<!\\)\\\\(?=(?:d?frac|tfrac|sqrt|left|right|leq?|geq?|lt|gt|neq?|pi|cdot|times|text|mathrm"
                      r"|mbox|boxed|infty|in|pm|cup|cap|sin|cos|tan|log|ln|quad|approx|mathbf|operatorname)(?![A-Za-z]))")


def normalize(text: str) -> str:
    """Strip presentation (math delimiters, spacing, \\text units, degrees, dollar signs)."""
    s = _DOUBLED.sub(lambda m: "\\", text.strip())
    s = _WRAP.sub(lambda m: " " + m.group(1) + " ", s)
    if _TRIG.search(s):  # "\\sin 30^\\circ": degrees inside a function are an angle, not presentation
        s = _DEGREES.sub(lambda m: f"\\frac{{{m.group(1)}\\pi}}{{180}}", s)
    s = re.sub(r"(?<=\d),\\!\s*(?=\d)", ",", s)  # "11,\! 111" is one number
    s = _DROP_RE.sub("", s)
    s = s.replace(";", ",")  # "(0;-2;6)", "-12;-11;-10": a semicolon separates items (after "\\;" spacing went)
    s = s.replace("\\%", "%").replace("\\{", "\x01").replace("\\}", "\x02").replace("\\cfrac", "\\frac")
    pairs = ", " not in s  # inside brackets "(5,250)" is a pair, "[1,000, 2,000]" two numbers
    s = _THOUSANDS.sub(lambda m: m.group() if pairs and _depth_at(s, m.start()) else m.group().replace(",", ""), s)
    if _SPACED_THOUSANDS.fullmatch(s.strip()):  # "1 000" written alone
        s = s.replace(" ", "")
    s = _MIXED.sub(_mixed, s)
    s = _ORDINAL.sub("", s)
    s = _PERCENT_WORD.sub("%", s)
    s = _CONNECTIVE.sub(",", s)
    s = re.sub(r"\s+", " ", s).strip().rstrip(".")
    return s.strip()


def _mixed(m: re.Match) -> str:
    sign, whole, num, den = m.groups()
    if int(den) == 0 or int(num) >= int(den):  # "1 3/2" is not how mixed numbers are written
        return m.group()
    return f"{sign}({whole}+{num}/{den})"


def clean_item(item: str) -> str:
    """One item: drop a leading `x =` and trailing unit words ("5 cm", "12 dollars")."""
    s = _LHS.sub("", item.strip(), count=1).strip()
    for _ in range(2):  # e.g. "5 square feet"
        m = _TRAIL_WORD.search(s)
        if not m or not s[: m.start()].strip():
            break
        word = m.group(1)
        if word.lower() in _MAGNITUDES:  # "3 million" is 3*10^6
            return f"({s[: m.start()].strip()})*10^{_MAGNITUDES[word.lower()]}"
        if word.lower() in _NOT_UNITS or not (word.lower() in _UNITS or len(word) >= 3):
            break
        s = s[: m.start()].strip()
    return s


def split_top(s: str, sep: str = ",") -> list[str]:
    """Split on `sep` outside brackets."""
    parts, depth, start = [], 0, 0
    i = 0
    while i < len(s):
        c = s[i]
        if c in "([{\x01":
            depth += 1
        elif c in ")]}\x02":
            depth -= 1
        elif depth == 0 and s.startswith(sep, i):
            parts.append(s[start:i])
            start = i + len(sep)
            i = start
            continue
        i += 1
    parts.append(s[start:])
    return parts


def _closes_at_end(s: str) -> bool:
    """True when the bracket opening at s[0] closes at s[-1] (not '(1)+(2)')."""
    depth = 0
    for i, c in enumerate(s):
        if c in "([{\x01":
            depth += 1
        elif c in ")]}\x02":
            depth -= 1
            if depth == 0:
                return i == len(s) - 1
    return False


_RELATION = re.compile(r"<=|>=|!=|<|>")
_FLIP = {"<": ">", ">": "<", "<=": ">=", ">=": "<="}
# A name: "x", "f(3)", "a_{10}", "\\overline{AB}", "f^{-1}(3)", "f'(x)", "|z|", "\\log_2 8" (a function and its argument).
_NAME_CORE = r"\\?[A-Za-z]+(?:\{[A-Za-z ]+\})?(?:_\{?\w+\}?)?(?:\^\{-1\})?'*(?:\([^()=]*\))?"
_NAME = rf"(?:\|\s*{_NAME_CORE}\s*\||\\[A-Za-z]+(?:_\{{?\w+\}}?)?\s*\d+|{_NAME_CORE})"
# A gold's left-hand side that only names what was asked for: "x", "f(3)", "AB", "(p,q)", a ratio
# "A:B" or "\frac{NO}{BO}". Names joined by an operator ("x + y = 5", "m+n=47", "2x + z = 1") make
# an equation: the answer 5 does not match it (AIME golds are the number itself: 47, not m+n=47).
_NAME_LHS = re.compile(rf"\s*(?:{_NAME}(?:\s*:\s*{_NAME})?|\\frac\{{{_NAME}\}}\{{{_NAME}\}}"
                       rf"|\(\s*{_NAME}(?:\s*,\s*{_NAME})+\s*\))\s*")
_MATRIX = re.compile(r"\s*[\[(]?\s*\\begin\{([pbvBV]?matrix|array)\}(?:\{[^{}]*\})?(.*)\\end\{\1\}\s*[\])]?\s*", re.S)


def _cut_approx(s: str) -> str:
    """`x = 1/3 \approx 0.33` -> `x = 1/3`; `x \approx 11` -> `x = 11`."""
    i = s.find("\\approx")
    if i < 0:
        return s
    return s[:i] if "=" in s[:i] else s.replace("\\approx", "=")


def equation_sides(s: str) -> list[str]:
    """The top-level `=` sides of one item (one side: not an equation; relations are not split)."""
    if len(split_top(s)) > 1 or re.search(r"[<>!]=", s):
        return [s]
    return split_top(s, "=")


def drop_lhs(s: str, gold: bool = False) -> str:
    """What follows the last top-level `=`: "m+n=47" -> "47", "(p,q)=(3,2)" -> "(3,2)", a chain
    "x = 5+5+1 = 11" -> "11". On the gold side a single `=` is dropped only when its left side names
    the unknown ("x", "m+n", "(p,q)"): "2x + z = 1" is an equation to match, not the value 1.
    A list of equations ("x=1, x=2") keeps its items for clean_item."""
    sides = equation_sides(s)
    if len(sides) == 1 or not sides[-1].strip():
        return _MEMBER.sub("", s, count=1)
    if gold and len(sides) == 2 and not _NAME_LHS.fullmatch(sides[0]):
        return s
    return sides[-1].strip()


_FUNCTION_CALL = re.compile(r"\\(?:arc)?(?:sin|cos|tan|cot|sec|csc)h?(?![A-Za-z])|\\(?:log|ln|exp)(?![A-Za-z])"
                            r"|(?<![A-Za-z\\])[A-Za-z](?:\^\{-1\})?'*\s*\(")


def left_sides_differ(answer: str, gold: str) -> bool:
    """Both state a function's value and name different ones: "\\cos x = 42/59" does not answer
    "\\sin x = 42/59", nor "g(3) = 5" "f(3) = 5" (dropping both left sides would equate them). A
    left side that names no function ("y = 3x + 2" for "f(x) = 3x + 2") is not compared."""
    a, g = (equation_sides(_cut_approx(normalize(t))) for t in (answer, gold))
    if len(a) < 2 or len(g) != 2 or not (_FUNCTION_CALL.search(a[0]) and _FUNCTION_CALL.search(g[0])):
        return False
    return re.sub(r"[\s{}()]", "", a[0]) != re.sub(r"[\s{}()]", "", g[0])


def _expand_pm(items: list[str]) -> list[str]:
    """`a \\pm b` -> `a - b`, `a + b` (one \\pm per item; more are left alone)."""
    out: list[str] = []
    for item in items:
        if len(_PM.findall(item)) == 1:
            out += [_PM.sub("-", item, count=1), _PM.sub("+", item, count=1)]
        else:
            out.append(item)
    return out


def _matrix(s: str) -> Shape | None:
    m = _MATRIX.fullmatch(s)
    if not m:
        return None
    rows = [r for r in re.split(r"\\\\", m.group(2)) if r.strip()]
    cells = [[c.strip() for c in r.split("&")] for r in rows]
    if not cells or any(len(r) != len(cells[0]) for r in cells):
        return None
    return Shape("matrix", tuple(c for r in cells for c in r), f"{len(cells)}x{len(cells[0])}")


def _relation(s: str) -> Shape | None:
    """`lhs op rhs` with one top-level <, >, <=, >= or != ("x >= 5"); a chain stays text."""
    ops = [m for m in _RELATION.finditer(s) if _depth_at(s, m.start()) == 0]
    if len(ops) != 1 or len(split_top(s)) > 1:
        return None
    op = ops[0]
    lhs, rhs = s[: op.start()].strip(), s[op.end() :].strip()
    return Shape("relation", (lhs, rhs), op.group()) if lhs and rhs else None


def _depth_at(s: str, pos: int) -> int:
    depth = 0
    for c in s[:pos]:
        depth += c in "([{\x01"
        depth -= c in ")]}\x02"
    return depth


def shape(text: str, gold: bool = False, keep_equation: bool = False) -> Shape:
    """The structure of an answer: normalized, its left-hand side dropped (see drop_lhs)."""
    s = _cut_approx(normalize(text))
    s = _chain_as_interval(_canonical_relations(s))
    sides = equation_sides(s)
    if keep_equation and len(sides) == 2:
        return Shape("equation", tuple(x.strip() for x in sides))
    s = drop_lhs(s, gold)
    if gold and len(equation_sides(s)) == 2:
        return Shape("equation", tuple(x.strip() for x in equation_sides(s)))
    return _structure(s)


_UNKNOWN = r"[A-Za-z](?:\([A-Za-z]\))?"  # "x", "f(x)"
_CHAIN_UP = re.compile(rf"([^<>=,]+?)\s*(<=|<)\s*{_UNKNOWN}\s*(<=|<)\s*([^<>=,]+)")
_CHAIN_DOWN = re.compile(rf"([^<>=,]+?)\s*(>=|>)\s*{_UNKNOWN}\s*(>=|>)\s*([^<>=,]+)")


def _chain_as_interval(s: str) -> str:
    """`-2 <= x < 7` is the interval `[-2, 7)` (so it equals `x \\in [-2, 7)` either way round)."""
    m = _CHAIN_UP.fullmatch(s.strip())
    if m:
        low, op_low, op_high, high = m.groups()
    elif m := _CHAIN_DOWN.fullmatch(s.strip()):
        high, op_high, op_low, low = m.groups()
    else:
        return s
    return f"{'[' if op_low == '<=' else '('}{low.strip()}, {high.strip()}{']' if op_high == '<=' else ')'}"


def _canonical_relations(s: str) -> str:
    s = re.sub(r"\\geq?(?![A-Za-z])|≥|\\geqslant", ">=", s)
    s = re.sub(r"\\leq?(?![A-Za-z])|≤|\\leqslant", "<=", s)
    s = re.sub(r"\\neq?(?![A-Za-z])|≠", "!=", s)
    return s.replace("\\lt", "<").replace("\\gt", ">")


def _structure(s: str) -> Shape:
    found = _matrix(combine(s) or s) or _relation(s)
    if found:
        return found
    if len(split_top(s, "\\cup")) > 1:
        return Shape("union", tuple(_structure(p.strip()) for p in split_top(s, "\\cup")))
    if len(s) >= 2 and s[0] == "\x01" and s[-1] == "\x02" and _closes_at_end(s):
        return Shape("set", tuple(clean_item(p) for p in _expand_pm(split_top(s[1:-1]))))
    if len(s) >= 2 and s[0] == "{" and s[-1] == "}" and _closes_at_end(s) and len(split_top(s[1:-1])) > 1:
        return Shape("set", tuple(clean_item(p) for p in _expand_pm(split_top(s[1:-1]))))  # "{1, 2}": TeX braces
    if len(s) >= 2 and s[0] in "([" and s[-1] in ")]" and _closes_at_end(s):
        items = tuple(clean_item(p) for p in split_top(s[1:-1]))
        if len(items) == 2 and (s[0] == "[" or s[-1] == "]"):
            return Shape("interval", items, s[0], s[-1])
        if len(items) >= 2:
            return Shape("tuple", items, s[0], s[-1])
    parts = _expand_pm([p for p in split_top(s) if p.strip()])
    if len(parts) > 1:
        return Shape("list", tuple(clean_item(p) for p in parts))
    return Shape("scalar", (clean_item(s),))
