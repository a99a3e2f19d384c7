"""Split a solution into steps and find the closed-form equalities worth checking.

Pure text work; the equalities are judged in a worker (see check.py). Conservative by design: a
side is only taken when it is a whole arithmetic run, not a fragment of something with variables
or words ("2x + 3 = 7", "f(2) = 5", "8 divided by 2 = 4" yield nothing checkable).
Written the way solutions write them: currency ("$30 + $40 = $70"), GSM8K calculator annotations
("<<30+40=70>>", checked on their own), thousands separators ("1,000.50"), LaTeX alignment (`&=`)
and equalities after words ("a total of 70 + 420 = 490"). Left alone: remainders ("= 89 R 6",
"= 1 with a remainder of 40"), base subscripts ("101_2 = 5"), parts of words and variables.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_STEP_MARK = re.compile(r"(?im)^[ \t]*(?:\*\*)?step\s*\d+\s*[:.)]")
_BLANK = re.compile(r"\n[ \t]*\n")
# Pieces an arithmetic run is made of: numbers (with 1,000 separators), operators, brackets,
# equals signs and the LaTeX commands the safe parser knows.
_RUN_PIECE = (
    r"\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\d,])|\d+(?:\.\d+)?|[ \t+\-*/^(){}=×÷·−]|\\?%"
    r"|\\(?:frac|dfrac|tfrac|cfrac|binom|dbinom|tbinom|sqrt|pi|cdot|times|div|left|right)(?![A-Za-z])|\[|\]"
)
_RUN = re.compile(f"(?:{_RUN_PIECE})+")
_OPERATOR_WORDS = {
    "by", "times", "plus", "minus", "over", "divided", "multiplied", "than", "to", "power",
    "squared", "cubed", "mod", "x", "and", "from",
}
# "of" is a boundary after a quantity's name ("a total of 70 + 420 = 490"), and an operator
# elsewhere ("half of 10 = 5", "3 groups of 4 = 12"): the left side is then not the whole value.
_OF_BOUNDARY = {
    "total", "sum", "cost", "costs", "price", "value", "result", "amount", "area", "perimeter", "volume",
    "profit", "revenue", "earnings", "savings", "average", "mean", "length", "width", "height",
    "distance", "weight", "balance", "budget", "salary", "worth", "bill", "income", "score",
}
# A right side followed by these is a remainder or a base, not the value: "89 R 6", "1 with a remainder".
_RIGHT_CONTINUES = {"r", "rem", "remainder", "with", "and", "base"}
_ANNOTATION = re.compile(r"<<([^<>\n]{1,200})>>")
_PERCENT_WORD = re.compile(r"(?<=\d)\s*(?:percent|pct)\b", re.I)
_CURRENCY = re.compile(r"\\\$|\$|\\text\{\s*\}|&|\\\\|\{,\}")
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


def repeated_paragraphs(text: str, start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
    """Spans of the paragraphs (blank-line separated, whitespace normalised) of text[start:end] that
    repeat an earlier one: the looping a policy trained with step spans can fall into."""
    end = len(text) if end is None else end
    seen: set[str] = set()
    out: list[tuple[int, int]] = []
    bounds = [start] + [m.end() for m in _BLANK.finditer(text, start, end)] + [end]
    for a, b in zip(bounds, bounds[1:]):
        key = " ".join(text[a:b].split())
        if key in seen:
            lead = len(text[a:b]) - len(text[a:b].lstrip())
            out.append((a + lead, a + len(text[a:b].rstrip())))
        elif key:
            seen.add(key)
    return out


def _words_before(text: str, pos: int) -> list[str]:
    """The word just before `pos` and the word adjacent before it, lower-cased ([] / [w] / [v, w])."""
    m = re.search(r"(?:([A-Za-z]+)[ \t]+)?([A-Za-z]+)\s*$", text[max(0, pos - 40) : pos])
    return [w.lower() for w in m.groups() if w] if m else []


def _word_after(text: str, pos: int) -> str:
    m = re.match(r"\s*([A-Za-z]+)", text[pos : pos + 40])
    return m.group(1).lower() if m else ""


def _open_left(text: str, start: int) -> bool:
    """True when the run is glued to what precedes it ('x_1 = 3', '2x + 3 = 7', 'by 2 = 4')."""
    if start == 0:
        return False
    before = text[start - 1]
    if before in ":." and text[start - 2 : start - 1].isdigit():  # a ratio or a time "3:4", ".5"
        return True
    if before in "$:,;\n" or (before.isspace() and not _words_before(text, start)):
        return False
    if not before.isspace():
        return True
    words = _words_before(text, start)
    word = words[-1]
    if word == "of":
        return len(words) < 2 or words[0] not in _OF_BOUNDARY
    return word in _OPERATOR_WORDS or len(word) == 1


def _open_right(text: str, end: int) -> bool:
    """True when the run continues into a variable or operator word ('= 3x', '= 3 times 4')."""
    if end >= len(text):
        return False
    after = text[end]
    if after.isalpha() or after in "_!" or (after in ":." and text[end + 1 : end + 2].isdigit()):
        return True
    word = _word_after(text, end)
    return word in _OPERATOR_WORDS or word in _RIGHT_CONTINUES or len(word) == 1


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


def prepare(step: str) -> list[str]:
    """The texts of a step to search for equalities: the step with currency signs, `&`, `\\\\` and
    `{,}` removed and calculator annotations blanked, then each annotation's inside on its own."""
    notes = [m.group(1) for m in _ANNOTATION.finditer(step)]
    body = _ANNOTATION.sub(" ", step)
    texts = [_PERCENT_WORD.sub("%", t) for t in [body, *notes]]
    return [_CURRENCY.sub(lambda m: "," if m.group() == "{,}" else " ", t) for t in texts]


def _plain_number(side: str) -> str:
    """'1,000.50' -> '1000.50' (the safe parser reads no separators)."""
    return re.sub(r"(?<=\d),(?=\d{3})", "", side)


def equations(text: str, steps: list[tuple[int, int]]) -> list[Equation]:
    """Adjacent `a = b` pairs of closed-form arithmetic in each step."""
    found: list[Equation] = []
    for k, (s, e) in enumerate(steps):
        for part in prepare(text[s:e]):
            found.extend(_part_equations(part, k))
            if len(found) >= MAX_EQUATIONS:
                return found[:MAX_EQUATIONS]
    return found


def _part_equations(text: str, k: int) -> list[Equation]:
    found: list[Equation] = []
    for m in _RUN.finditer(text):
        if "=" not in m.group():
            continue
        run = m.group()
        start = m.start() + len(run) - len(run.lstrip())
        end = m.end() - len(run) + len(run.rstrip())
        sides = [_plain_number(x.strip()) for x in run.split("=")]
        if _open_left(text, start) or sides[0][:1] in _OPERATORS:
            sides[0] = ""
        if _open_right(text, end) or sides[-1][-1:] in _OPERATORS:
            sides[-1] = ""
        for left, right in zip(sides, sides[1:]):
            if left and right:
                found.append(Equation(k, left, right, _leading_term(right)))
        if len(found) >= MAX_EQUATIONS:
            break
    return found
