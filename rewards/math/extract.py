"""Find the final answer in a completion: the last \\boxed{...}/\\fbox{...}, else a final-answer phrase.

Rules (no reward for hedging):
- Boxes are matched with balanced braces in one linear pass (1 MB completions stay cheap).
- The final boxes are the top-level boxes of the last paragraph (blank-line separated) that has one;
  if they hold different values the answer is ambiguous and counts as none. A self-correction in a
  later paragraph ("\\boxed{2} ... wait, it is \\boxed{3}") takes the later box.
- A box whose brace never closes, after the last closed box, makes the answer unbalanced: none.
- Without a box: the last phrase "final answer is X", "the answer is X", "answer: X" or "#### X";
  X runs to the end of its line, minus trailing punctuation and $ delimiters.
Offsets are code points of the completion, half-open.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_BOX = re.compile(r"\\(?:boxed|fbox)\s*\{")
_PARA = re.compile(r"\n[ \t]*\n")
_PHRASE = re.compile(
    r"(?:final\s+answer\s*(?:is|:)|the\s+answer\s+is|answer\s*:|####)[ \t]*(?:[:=][ \t]*)?(?P<x>[^\n]*)",
    re.I,
)
_TRAILING = " \t.。,;!"


@dataclass(frozen=True)
class Extraction:
    """The answer text and its span, or `answer is None` with the reason."""

    answer: str | None
    start: int = 0
    end: int = 0
    reason: str = ""


def match_braces(text: str) -> dict[int, int]:
    """Index of each '{' -> index of its matching '}' (escaped \\{ \\} are not braces)."""
    pairs: dict[int, int] = {}
    stack: list[int] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "\\" and i + 1 < n and text[i + 1] in "{}":
            i += 2
            continue
        if c == "{":
            stack.append(i)
        elif c == "}" and stack:
            pairs[stack.pop()] = i
        i += 1
    return pairs


def _boxes(text: str) -> tuple[list[tuple[int, int]], int]:
    """Top-level box contents as (start, end); and the start of the last unclosed box (-1: none)."""
    pairs = match_braces(text)
    found: list[tuple[int, int]] = []
    unclosed = -1
    covered = -1  # end of the last top-level box: boxes inside it are not top-level
    for m in _BOX.finditer(text):
        brace = m.end() - 1
        if brace < covered:
            continue
        close = pairs.get(brace)
        if close is None:
            unclosed = m.start()
            continue
        found.append((brace + 1, close))
        covered = close
    return found, unclosed


def extract_answer(text: str) -> Extraction:
    """The final answer of a completion (see the module docstring for the rules)."""
    boxes, unclosed = _boxes(text)
    if unclosed >= 0 and (not boxes or unclosed > boxes[-1][1]):
        return Extraction(None, reason="unbalanced braces in the final \\boxed{}")
    if boxes:
        return _from_boxes(text, boxes)
    return _from_phrase(text)


def _from_boxes(text: str, boxes: list[tuple[int, int]]) -> Extraction:
    last_start = boxes[-1][0]
    para_start = 0
    for m in _PARA.finditer(text, 0, last_start):
        para_start = m.end()
    final = [b for b in boxes if b[0] >= para_start]
    values = {_canon(text[s:e]) for s, e in final}
    if len(values) > 1:
        return Extraction(None, reason=f"{len(values)} different boxed answers")
    start, end = _trim(text, *final[-1])
    if start >= end:
        return Extraction(None, reason="empty \\boxed{}")
    return Extraction(text[start:end], start, end, "boxed")


def _from_phrase(text: str) -> Extraction:
    last = None
    for m in _PHRASE.finditer(text):
        last = m
    if last is None:
        return Extraction(None, reason="no \\boxed{} answer or final-answer phrase")
    start, end = _trim(text, last.start("x"), last.end("x"))
    while end > start and text[end - 1] in _TRAILING + "$":
        end -= 1
    while start < end and text[start] == "$":
        start += 1
    start, end = _trim(text, start, end)
    if start >= end:
        return Extraction(None, reason="final-answer phrase without an answer")
    return Extraction(text[start:end], start, end, "phrase")


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _canon(s: str) -> str:
    return re.sub(r"\s+", "", s)
