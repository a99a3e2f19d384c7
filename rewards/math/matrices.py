"""Matrix arithmetic written out in an answer ("The sum is $A + B$", "$I \\cdot M$"), done on text.

`A + B`, `A - B` and products (`A B`, `A \\cdot B`, `A \\times B`) of written-out matrices become one
pmatrix whose cells are the cells' expressions ("(1)+(5)", "(1)*(1)+(0)*(0)"), parsed later like
any other cell by the whitelist parser in the checker process: nothing is evaluated here.
"""

from __future__ import annotations

import re

_ENV = re.compile(r"\\begin\{([pbvBV]?matrix|array)\}(?:\{[^{}]*\})?(.*?)\\end\{\1\}", re.S)
MAX_SIZE = 6  # rows or columns: a product's cell text grows with the inner size


def cells(body: str) -> list[list[str]] | None:
    """The cells of a matrix body row by row, or None when the rows differ in length."""
    rows = [[c.strip() for c in r.split("&")] for r in re.split(r"\\\\", body) if r.strip()]
    if not rows or any(len(r) != len(rows[0]) for r in rows) or len(rows) > MAX_SIZE or len(rows[0]) > MAX_SIZE:
        return None
    return rows


def _apply(a: list[list[str]], op: str, b: list[list[str]]) -> list[list[str]] | None:
    if op in ("+", "-"):
        if (len(a), len(a[0])) != (len(b), len(b[0])):
            return None
        return [[f"({x}){op}({y})" for x, y in zip(ra, rb)] for ra, rb in zip(a, b)]
    if len(a[0]) != len(b):
        return None
    return [["+".join(f"({a[i][k]})*({b[k][j]})" for k in range(len(b))) for j in range(len(b[0]))]
            for i in range(len(a))]


def combine(s: str) -> str | None:
    """One pmatrix for a sum / difference / product of written-out matrices; None for anything else."""
    found = list(_ENV.finditer(s))
    if len(found) < 2 or s[: found[0].start()].strip() or s[found[-1].end():].strip():
        return None
    result = cells(found[0].group(2))
    for before, m in zip(found, found[1:]):
        gap = s[before.end(): m.start()].strip()
        other = cells(m.group(2))
        if result is None or other is None or gap not in ("+", "-", "", "\\cdot", "\\times"):
            return None
        result = _apply(result, gap if gap in ("+", "-") else "*", other)
    if result is None:
        return None
    return "\\begin{pmatrix}" + " \\\\ ".join(" & ".join(r) for r in result) + "\\end{pmatrix}"
