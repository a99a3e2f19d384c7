"""Normalize an answer string and find its shape: scalar, unordered list, set, tuple, interval, union.

Pure string work (no sympy): wrappers ($, \\left, spacing, \\text units, degrees, currency) go,
a left-hand side goes (`x = 5`, `m+n=47`, `(x, y) = (2, 5)` keep what follows the last `=`),
"1,000.99", "1{,}000" and "1,\\!000" become plain numbers, `\\pm` becomes two roots, and top-level
commas split the items.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_DROP = [r"\$", r"\\\(", r"\\\)", r"\\\[", r"\\\]", r"\\displaystyle", r"\\left", r"\\right", r"\\!", r"\\,",
         r"\\;", r"\\:", r"\\ ", "~", r"\^\{?\\circ\}?", r"\\circ", r"\\degree", "°", r"\{,\}", r"\{\s*,\s*\}",
         r"\\\$", "€", "£", "¥", r"\\euro", r"\\pounds"]
_DROP_RE = re.compile("|".join(_DROP))
_WRAP = re.compile(r"\\(?:text|textbf|textrm|textnormal|textit|textup|mathrm|mathbf|mathit|mathsf|mbox|operatorname)"
                   r"\s*\{([^{}]*)\}")
_THOUSANDS = re.compile(r"(?<![\d.,])\d{1,3}(?:,\d{3})+(?=\.\d|(?![\d,.]))")
_SPACED_THOUSANDS = re.compile(r"-?\d{1,3}(?: \d{3})+(?:\.\d+)?")
_PERCENT_WORD = re.compile(r"\s*(?:percent(?:age)?|pct)\.?\s*$", re.I)
_PM = re.compile(r"\\pm|±")
_LHS = re.compile(r"^\s*(?:\\?[A-Za-z]+(?:_\{?\w+\}?)?|[A-Za-z]\([A-Za-z]\))\s*(?:=|\\in)\s*")
_MEMBER = re.compile(r"^\s*[A-Za-z]\s*\\in\s*")
_CONNECTIVE = re.compile(r"\s+(?:and|or)\s+|\\quad|\\qquad", re.I)
_UNITS = {
    "m", "cm", "mm", "km", "g", "kg", "mg", "s", "ms", "h", "hr", "hrs", "min", "mins", "ft", "in",
    "yd", "mi", "l", "ml", "mph", "kph", "sq", "cu",
}
_NOT_UNITS = {"sqrt", "pi", "frac", "dfrac", "infty", "cdot", "times", "div"}
_TRAIL_WORD = re.compile(r"(?<=[\d)}\s.])\s*([A-Za-z]+)\.?(?:\^\{?[23]\}?)?\s*$")


@dataclass(frozen=True)
class Shape:
    """An answer's structure. kind: scalar | list | set | tuple | interval | union."""

    kind: str
    items: tuple  # item strings (scalar/list/set/tuple/interval) or Shapes (union)
    left: str = ""  # interval brackets: '[' or '('
    right: str = ""


def normalize(text: str) -> str:
    """Strip presentation (math delimiters, spacing, \\text units, degrees, dollar signs)."""
    s = text.strip()
    s = _WRAP.sub(lambda m: " " + m.group(1) + " ", s)
    s = _DROP_RE.sub("", s)
    s = s.replace("\\%", "%").replace("\\{", "\x01").replace("\\}", "\x02").replace("\\cfrac", "\\frac")
    s = _THOUSANDS.sub(lambda m: m.group().replace(",", ""), s)
    if _SPACED_THOUSANDS.fullmatch(s.strip()):  # "1 000" written alone
        s = s.replace(" ", "")
    s = _PERCENT_WORD.sub("%", s)
    s = _CONNECTIVE.sub(",", s)
    s = re.sub(r"\s+", " ", s).strip().rstrip(".")
    return s.strip()


def clean_item(item: str) -> str:
    """One item: drop a leading `x =` and trailing unit words ("5 cm", "12 dollars")."""
    s = _LHS.sub("", item.strip(), count=1).strip()
    for _ in range(2):  # e.g. "5 square feet"
        m = _TRAIL_WORD.search(s)
        if not m or not s[: m.start()].strip():
            break
        word = m.group(1)
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


def drop_lhs(s: str) -> str:
    """What follows the last top-level `=` ("m+n=47" -> "47", "(p,q)=(3,2)" -> "(3,2)"), when
    the text is one equation; a list of them ("x=1, x=2") keeps its items for clean_item."""
    if len(split_top(s)) > 1:
        return _MEMBER.sub("", s, count=1)
    marked = re.sub(r"\\(?:leq?|geq?|neq?)(?![A-Za-z])|[<>!]=|\\approx", "\x03", s)
    sides = split_top(marked, "=")
    if len(sides) > 1 and "\x03" not in marked and sides[-1].strip():
        return sides[-1].strip()
    return _MEMBER.sub("", s, count=1)


def _expand_pm(s: str) -> str:
    """`a \\pm b` -> `a - b, a + b` (one \\pm in one item; more are left alone)."""
    parts = split_top(s)
    if len(parts) != 1 or len(_PM.findall(s)) != 1:
        return s
    minus, plus = _PM.sub("-", s, count=1), _PM.sub("+", s, count=1)
    return f"{minus},{plus}"


def shape(text: str) -> Shape:
    """The structure of a normalized answer."""
    s = _expand_pm(drop_lhs(normalize(text)))
    if len(split_top(s, "\\cup")) > 1:
        return Shape("union", tuple(shape(p) for p in split_top(s, "\\cup")))
    if len(s) >= 2 and s[0] == "\x01" and s[-1] == "\x02" and _closes_at_end(s):
        return Shape("set", tuple(clean_item(p) for p in split_top(s[1:-1])))
    if len(s) >= 2 and s[0] in "([" and s[-1] in ")]" and _closes_at_end(s):
        items = tuple(clean_item(p) for p in split_top(s[1:-1]))
        if len(items) == 2 and (s[0] == "[" or s[-1] == "]"):
            return Shape("interval", items, s[0], s[-1])
        if len(items) >= 2:
            return Shape("tuple", items, s[0], s[-1])
    parts = split_top(s)
    if len(parts) > 1:
        return Shape("list", tuple(clean_item(p) for p in parts if p.strip()))
    return Shape("scalar", (clean_item(s),))
