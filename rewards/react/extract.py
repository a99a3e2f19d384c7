"""Find the code to check in a completion, and map JavaScript (UTF-16) positions back to it.

Rule (also used by the render service): the first fenced block tagged tsx, jsx, typescript, ts,
javascript or js (any case); else the first untagged fenced block; else the whole text. A fence
left open (a completion cut off by the token limit) runs to the end of the text. A reasoning
model's thinking block is skipped first (botgrpo_rewards.thinking): code is read only after it.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from typing import Any

from botgrpo_rewards.thinking import reasoning_of

CODE_LANGS = ("tsx", "jsx", "typescript", "ts", "javascript", "js")

# An opening fence at a line start: ``` + optional tag + rest of the line; the body starts after it.
_OPEN = re.compile(r"^[ \t]*```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n", re.MULTILINE)
_CLOSE = re.compile(r"^[ \t]*```[ \t]*$", re.MULTILINE)
_ASTRAL = re.compile("[\U00010000-\U0010FFFF]")
# What a component attempt holds: a JSX-like tag (`<` then a name or `>`, checker.js's MAYBE_JSX),
# or a function, arrow or class that could return an element (React.createElement without JSX).
# Text with neither is no attempt (empty, prose, a refusal).
_MAYBE_COMPONENT = re.compile(r"<\s*[A-Za-z_$>]|\bfunction\b|=>|\bclass\b")


def _block_at(text: str, match: re.Match) -> tuple[str, int]:
    body_start = match.end()
    close = _CLOSE.search(text, body_start)
    body_end = close.start() if close else len(text)
    return text[body_start:body_end], body_start


def extract_code(completion: str) -> tuple[str, int]:
    """(code, offset): the code to check and where it starts in `completion` (code points)."""
    untagged, pos = None, 0
    while (match := _OPEN.search(completion, pos)) is not None:
        tag = match.group(1).lower()
        if tag in CODE_LANGS:
            return _block_at(completion, match)
        if not tag and untagged is None:
            untagged = match
        # Resume after this block's closing fence, so a closing ``` is never read as an opening.
        close = _CLOSE.search(completion, match.end())
        if close is None:
            break
        pos = close.end()
    if untagged is not None:
        return _block_at(completion, untagged)
    return completion, 0


def maybe_component(code: str) -> bool:
    """True when the code could hold a component: a JSX-like tag, a function, an arrow or a class."""
    return _MAYBE_COMPONENT.search(code) is not None


def answer_code(completion: str, options: dict[str, Any]) -> tuple[str, int] | None:
    """`extract_code` of the text after the reasoning (offset in the whole completion), or None
    when the reasoning never closed: then nothing was answered."""
    reasoning = reasoning_of(completion, options)
    if reasoning.truncated:
        return None
    code, offset = extract_code(completion[reasoning.answer_start:])
    return code, offset + reasoning.answer_start


class Utf16Map:
    """Converts UTF-16 code-unit offsets in `text` (what JavaScript reports) to code points."""

    def __init__(self, text: str):
        # UTF-16 offset just past each astral character (two units, one code point).
        self._ends = [m.start() + k + 2 for k, m in enumerate(_ASTRAL.finditer(text))]
        self.n_chars = len(text)

    def to_cp(self, unit: int) -> int:
        """Code point index of a UTF-16 offset; an offset inside a surrogate pair rounds up."""
        if not self._ends:
            return max(0, min(unit, self.n_chars))
        return max(0, min(unit - bisect_right(self._ends, unit), self.n_chars))
