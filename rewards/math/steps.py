"""Split a solution into steps and find the closed-form equalities worth checking.

Pure text work; the equalities are judged in a worker (see check.py). Conservative by design: a
side is only taken when it is a whole arithmetic run, not a fragment of something with variables
or words ("2x + 3 = 7", "f(2) = 5", "8 divided by 2 = 4" yield nothing checkable).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_STEP_MARK = re.compile(r"(?im)^[ \t]*(?:\*\*)?step\s*\d+\s*[:.)]")
_BLANK = re.compile(r"\n[ \t]*\n")
# Pieces an arithmetic run is made of: numbers (with 1,000 separators), operators, brackets,
# equals signs and the LaTeX commands the safe parser knows.
_RUN_PIECE = (
    r"\d{1,3}(?:,\d{3})+(?![\d,])|\d+(?:\.\d+)?|[ \t+\-*/^(){}=×÷·−]"
    r"|\\(?:frac|dfrac|tfrac|sqrt|pi|cdot|times|div|left|right)(?![A-Za-z])|\[|\]"
)
_RUN = re.compile(f"(?:{_RUN_PIECE})+")
_OPERATOR_WORDS = {
    "by", "times", "of", "plus", "minus", "over", "divided", "multiplied", "than", "to", "power",
    "squared", "cubed", "mod", "x",
}
_OPERATORS = "+-*/^×÷·−="
MAX_EQUATIONS = 200


@dataclass(frozen=True)
class Equation:
    """`left = right` found in step `step`; `head` is the leading term of `right` for running totals."""

    step: int
    left: str
    right: str
    head: str | None


def split_steps(text: str) -> list[tuple[int, int]]:
    """Steps as (start, end) spans: 'Step k:' markers if there are two or more, else paragraphs."""
    marks = [m.start() for m in _STEP_MARK.finditer(text)]
    if len(marks) >= 2:
        bounds = ([0] if marks[0] > 0 and text[: marks[0]].strip() else []) + marks + [len(text)]
    else:
        bounds = [0] + [m.end() for m in _BLANK.finditer(text)] + [len(text)]
    spans = []
    for start, end in zip(bounds, bounds[1:]):
        while start < end and text[start].isspace():
            start += 1
        while end > start and text[end - 1].isspace():
            end -= 1
        if start < end:
            spans.append((start, end))
    return spans


def _word_before(text: str, pos: int) -> str:
    m = re.search(r"([A-Za-z]+)\s*$", text[max(0, pos - 40) : pos])
    return m.group(1).lower() if m else ""


def _word_after(text: str, pos: int) -> str:
    m = re.match(r"\s*([A-Za-z]+)", text[pos : pos + 40])
    return m.group(1).lower() if m else ""


def _open_left(text: str, start: int) -> bool:
    """True when the run is glued to what precedes it ('x_1 = 3', '2x + 3 = 7', 'by 2 = 4')."""
    if start == 0:
        return False
    before = text[start - 1]
    if before in "$:,;\n" or (before.isspace() and not _word_before(text, start)):
        return False
    if not before.isspace():
        return True
    word = _word_before(text, start)
    return word in _OPERATOR_WORDS or len(word) == 1


def _open_right(text: str, end: int) -> bool:
    """True when the run continues into a variable or operator word ('= 3x', '= 3 times 4')."""
    if end >= len(text):
        return False
    after = text[end]
    if after.isalpha() or after == "_" or after == "!":
        return True
    word = _word_after(text, end)
    return word in _OPERATOR_WORDS or len(word) == 1


def _leading_term(side: str) -> str | None:
    depth = 0
    for i, c in enumerate(side):
        if c in "({[":
            depth += 1
        elif c in ")}]":
            depth -= 1
        elif depth == 0 and i > 0 and c in "+-−" and side[:i].strip():
            return side[:i].strip()
    return None


def equations(text: str, steps: list[tuple[int, int]]) -> list[Equation]:
    """Adjacent `a = b` pairs of closed-form arithmetic in each step."""
    found: list[Equation] = []
    for k, (s, e) in enumerate(steps):
        for m in _RUN.finditer(text, s, e):
            if "=" not in m.group():
                continue
            run = m.group()
            start = m.start() + len(run) - len(run.lstrip())
            end = m.end() - len(run) + len(run.rstrip())
            sides = [x.strip() for x in run.split("=")]
            if _open_left(text, start) or sides[0][:1] in _OPERATORS:
                sides[0] = ""
            if _open_right(text, end) or sides[-1][-1:] in _OPERATORS:
                sides[-1] = ""
            for left, right in zip(sides, sides[1:]):
                if left and right:
                    found.append(Equation(k, left, right, _leading_term(right)))
            if len(found) >= MAX_EQUATIONS:
                return found
    return found
