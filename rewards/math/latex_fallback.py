"""LaTeX beyond the whitelist grammar (\\binom, \\log, \\sin, ...) through sympy's ANTLR parse_latex.

Used only inside a checker process (a hostile input there costs at most one killed worker), only
for texts our own parser does not accept. A result with letters (\\sec^2 y) is compared by
evaluation at points (compare.py); one with a float in it is refused (only exact forms are kept).
parse_latex builds sympy objects from a parse tree; it does not eval or sympify the text.
"""

from __future__ import annotations

import re

import sympy

from botgrpo_rewards.math.parse import MAX_DIGITS, ParseError, Parsed, TooBig

MAX_CHARS = 300
_LONG_NUMBER = re.compile(r"\d{%d,}" % (MAX_DIGITS + 1))


def preload() -> None:
    """Import the ANTLR parser ahead of the first job (it takes seconds)."""
    from sympy.parsing.latex import parse_latex  # noqa: F401


def parse_latex_number(text: str) -> Parsed:
    """A closed-form number from LaTeX, or ParseError."""
    if len(text) > MAX_CHARS or _LONG_NUMBER.search(text):
        raise TooBig("LaTeX answer too long")
    from sympy.parsing.latex import LaTeXParsingError, parse_latex

    try:
        value = parse_latex(text).subs(sympy.Symbol("pi"), sympy.pi).doit()
    except (LaTeXParsingError, TypeError, ValueError, AttributeError) as err:
        raise ParseError(f"LaTeX not understood: {err}") from None
    if not isinstance(value, sympy.Expr) or value.has(sympy.Float) or value.atoms(sympy.Derivative, sympy.Integral):
        raise ParseError("LaTeX answer is not an exact closed form")
    return Parsed(value)
