"""Which step equalities belong to the problem: grounded operands (pure text work, exact fractions).

A true equality is worth credit only when it computes with the problem's numbers or with results
of earlier grounded equalities: `7 * 8 = 56` in a solution of a problem that holds neither 7 nor 8
is true arithmetic, not this problem's solution (a policy trained with step credit can learn to
write such lines). The problem's numbers are read from the request's prompt (digits, thousands
separators, decimals, a percent also as its fraction, and the small number words problems use).
Numbers are compared as exact fractions (`fractions.Fraction` of the digits; no parser runs here).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction

from botgrpo_rewards.math.steps import Equation

_NUMBER = re.compile(r"(?<![\d.])\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\d,])|(?<![\d.])\d+(?:\.\d+)?")
_PERCENT_AFTER = re.compile(r"\s*(?:\\?%|percent\b)", re.I)
_WORDS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
    "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30,
    "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90, "hundred": 100,
    "thousand": 1000, "dozen": 12, "half": 2, "twice": 2, "double": 2, "pair": 2, "triple": 3,
    "thrice": 3, "quarter": 4,
}
_WORD = re.compile(r"[A-Za-z]+")
# A right side is the step's result alone ("28", "-3", "0.5", "\\frac{5}{6}", "5/6", "4\\pi", "3\\sqrt{2}",
# "12%") when it holds no operator but a leading sign or a fraction bar, and at most two numbers.
_COMPUTING = re.compile(r"[+*×·÷^−]|\\(?:cdot|times|div)\b|(?<=\S)\s*-")
_FRACTION = re.compile(r"\\[dt]?frac\{(\d+(?:\.\d+)?)\}\{(\d+(?:\.\d+)?)\}|(\d+(?:\.\d+)?)\s*/\s*(\d+(?:\.\d+)?)")
MAX_DIGITS = 60
_PLAIN = re.compile(r"-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?")


def _value(digits: str) -> Fraction | None:
    """An exact number from its digits ("1,200.5"); None past MAX_DIGITS (no grounding needs it)."""
    digits = digits.replace(",", "")
    return Fraction(digits) if len(digits) <= MAX_DIGITS else None


def problem_numbers(prompt: str) -> set[Fraction]:
    """The numbers a problem states: digits ("1,200", "2.5"; "25%" also as 1/4, "3/4" also as its
    value) and number words ("twelve", "a dozen", "half")."""
    found: set[Fraction] = set()
    for m in _NUMBER.finditer(prompt):
        value = _value(m.group())
        if value is not None:
            found.add(value)
            if _PERCENT_AFTER.match(prompt, m.end()):
                found.add(value / 100)
    found.update(_fraction_values(prompt))
    found.update(Fraction(_WORDS[w.lower()]) for w in _WORD.findall(prompt) if w.lower() in _WORDS)
    return found


def side_numbers(side: str) -> list[Fraction]:
    """The numbers written on one side of an equality (each operand, not the side's value)."""
    return [v for v in (_value(m.group()) for m in _NUMBER.finditer(side)) if v is not None]


def _fraction_values(text: str) -> set[Fraction]:
    """The values of the fractions written in a text ("\\frac{1}{2}", "3/4")."""
    out = set()
    for m in _FRACTION.finditer(text):
        num, den = (_value(g) for g in m.groups() if g is not None)
        if num is not None and den:
            out.add(num / den)
    return out


def result_values(side: str) -> set[Fraction]:
    """What a right side that is one value makes known to later steps: the numbers it is written
    with and a fraction's value ("\\frac{5}{6}": 5, 6 and 5/6; "25%": 25 and 1/4); nothing when the
    side computes more ("12 + 5"). Signs are dropped, as operands are read without them."""
    side = side.strip()
    numbers = side_numbers(side)
    if not numbers or len(numbers) > 2 or _COMPUTING.search(side.lstrip("(-")):
        return set()
    values = set(numbers) | _fraction_values(side)
    if side.endswith("%"):
        values |= {v / 100 for v in values}
    return values


@dataclass(frozen=True)
class Grounding:
    """Per equality whether its operands are grounded, and the numbers known at the end."""

    grounded: tuple[bool, ...]
    known: frozenset[Fraction]


def ground(found: list[Equation], verdicts: list[bool | None], known: set[Fraction]) -> Grounding:
    """Walk the equalities in order. One is grounded when every number on its left side, and on its
    right side unless that side is the result alone, is known; a true grounded one makes its result
    known, and so does a grounded running total ("3*4 = 12 + 5": its head 12). A false equality's
    result is never known: a step built on a slip is not grounded."""
    known = set(known)
    out: list[bool] = []
    for eq, verdict in zip(found, verdicts):
        running = verdict is None and eq.head is not None and eq.right.startswith(eq.head)
        results = result_values(eq.head if running else eq.right)  # type: ignore[arg-type]
        rest = eq.right[len(eq.head):] if running else ("" if results else eq.right)  # type: ignore[arg-type]
        ok = all(n in known for n in side_numbers(eq.left) + side_numbers(rest))
        out.append(ok)
        if ok and (verdict is True or running):
            known |= results
    return Grounding(tuple(out), frozenset(known))


def answer_value(answer: str) -> Fraction | None:
    """A final answer that is one plain number ("28", "$1,200$", "-3.5"), unsigned; else None."""
    s = answer.strip().strip("$").strip()
    value = _value(s.lstrip("-")) if _PLAIN.fullmatch(s) else None
    return value
