"""Find the final answer of a completion, the way models and datasets write it.

Where the answer may be (offsets are code points of the completion, half-open):
- Reasoning: text inside <think>...</think> is never the answer. The answer is read after the
  last closing tag; a thinking block left open means no answer (tag names are configurable, and
  `think_open` says the prompt opened the block: see botgrpo_rewards.thinking).
- Boxes: `\\boxed{X}` / `\\fbox{X}` with balanced braces, found in one linear pass.
- Final-answer lines: Minerva "Final Answer: The final answer is $X$. I hope it is correct.",
  "The answer is: X" (WizardMath), "Answer: X", "Answer $X$", "#### X" (GSM8K), a PRM800K
  "# Answer" line or a "**Final Answer**" heading followed by the answer on the next non-empty line.
- A completion that is nothing but an answer ("$0.111$", "(3,2)", "\\frac{1}{2}", "42"), or whose
  last line is one math expression standing alone.
Which one wins (no reward for hedging):
- The final statement is the last paragraph (blank-line separated) holding a box or a final-answer
  line. A final-answer line after the paragraph's boxes wins over them (intermediate results were
  boxed); a box after (or inside) the line is the answer.
- Boxes in the final statement that hold different values are a hedge: no answer. A later paragraph
  overrides an earlier one (self-correction). An unclosed box anywhere after the reasoning means no
  answer: in TeX it holds everything after it, so no box or line after it stands on its own, and one
  before it was not the last word.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from botgrpo_rewards.math.sentence import (MATH_ENV, SENTENCE_END, TRAILING, find_closer, only_value, stated_value, trim,
                                          value_in_sentence)
from botgrpo_rewards.protocol import DEFAULT_TAGS, split_reasoning

DEFAULT_THINK_TAGS = DEFAULT_TAGS
_BOX = re.compile(r"\\(?:boxed|fbox)\s*\{")
_SIZED_BRACE = re.compile(r"\\(?:left|right|[bB]igg?[lrm]?)\s*[{}]")
_BRACELESS_BOX = re.compile(r"\\(?:boxed|fbox)[ \t]+(-?\d+(?:\.\d+)?|[A-Za-z])(?![\w{])(?!\.\d)")
_CHAT_END = re.compile(r"<\|im_end\|>|<\|im_start\|>|<\|endoftext\|>|<\|eot_id\|>|<\|end\|>|</s>")
_PARA = re.compile(r"\n[ \t]*\n")
# A final-answer phrase; the answer starts at its end. Order does not matter: the last match wins.
_PHRASE = re.compile(
    r"(?:final\s+answer\s*(?:is|:)|the\s+(?:final\s+)?answer\s+is|(?<![A-Za-z])answer\s*(?::|(?=\$|\\\(|\\\[))|####)"
    r"[ \t]*(?:[:=][ \t]*)?",
    re.I,
)
# A heading whose answer is on the next non-empty line: "# Answer", "**Final Answer**", "## Final Answer:".
_HEADING = re.compile(r"(?im)^[ \t]*(?:#{1,6}[ \t]*|\*\*)(?:final[ \t]+)?answer[ \t]*:?[ \t]*(?:\*\*)?[ \t]*:?[ \t]*$")
_HOPE = re.compile(r"\.?\s*I hope it is correct.*$", re.I | re.S)
MAX_BARE_CHARS = 120
_WORD = re.compile(r"(?<![\\A-Za-z])[A-Za-z]{3,}")
_TEXT_ARG = re.compile(r"\\(?:text|textbf|textrm|textnormal|mathrm|mbox|begin|end)\s*\{[^{}]*\}")


@dataclass(frozen=True)
class Extraction:
    """The answer text and its span, or `answer is None` with the reason."""

    answer: str | None
    start: int = 0
    end: int = 0
    reason: str = ""


def match_braces(text: str, start: int = 0) -> dict[int, int]:
    """Index of each '{' from `start` -> index of its matching '}'. Escaped \\{ \\} are not braces, nor
    is one a sizing command takes as its delimiter (`\\left{`, models' slip for `\\left\\{`)."""
    pairs: dict[int, int] = {}
    stack: list[int] = []
    i, n = start, len(text)
    while i < n:
        c = text[i]
        if c == "\\" and i + 1 < n and text[i + 1] in "{}":
            i += 2
            continue
        if c == "\\" and (sized := _SIZED_BRACE.match(text, i)):
            i = sized.end()
            continue
        if c == "{":
            stack.append(i)
        elif c == "}" and stack:
            pairs[stack.pop()] = i
        i += 1
    return pairs


def _none(reason: str) -> Extraction:
    return Extraction(None, reason=reason)


def answer_region(text: str, think_tags: tuple[str, str] | None = DEFAULT_THINK_TAGS,
                  think_open: bool = False) -> tuple[int, str]:
    """(start, reason): where the answer may be; reason is non-empty when there is none. The shared
    split (botgrpo_rewards.thinking) ends the reasoning at the first close tag; a math answer is
    read after the *last* one, and a block opened again after it and never closed holds no answer."""
    split = split_reasoning(text, think_tags, think_open)
    if split.truncated:
        return len(text), f"unclosed {think_tags[0]}: the model was still thinking"
    if think_tags is None:
        return 0, ""
    opening, closing = think_tags
    close = text.rfind(closing, split.answer_start)
    after = close + len(closing) if close >= 0 else split.answer_start
    if text.find(opening, after) >= 0:
        return len(text), f"unclosed {opening}: the model was still thinking"
    return after, ""


def answer_bounds(text: str, think_tags: tuple[str, str] | None = DEFAULT_THINK_TAGS,
                  think_open: bool = False) -> tuple[int, int]:
    """[start, end) of the text that is graded (the answer, the step checks): after the reasoning
    block and before an end-of-turn token; empty (start == end) while the model was still thinking."""
    junk = _CHAT_END.search(text)
    end = junk.start() if junk else len(text)
    start, why = answer_region(text[:end], think_tags, think_open)
    return (end, end) if why else (start, end)


def extract_answer(text: str, think_tags: tuple[str, str] | None = DEFAULT_THINK_TAGS,
                   think_open: bool = False) -> Extraction:
    """The final answer of a completion (see the module docstring for the rules)."""
    junk = _CHAT_END.search(text)
    text = text[: junk.start()] if junk else text  # what follows an end-of-turn token was never the answer
    region, why = answer_region(text, think_tags, think_open)
    if why:
        return _none(why)
    pairs = match_braces(text, region)
    boxes, unclosed = _boxes(text, region, pairs)
    if unclosed >= 0:  # all that follows an unclosed box is inside it: no answer there, and none before it is final
        return _none("unbalanced braces in a \\boxed{}: an unclosed box holds everything after it")
    marker = _last_marker(text, region)
    if marker is not None and (not boxes or marker[0] >= _paragraph_start(text, boxes[-1][0], region)):
        if not boxes or marker[1] >= boxes[-1][0]:
            return _after_marker(text, marker, boxes)
        boxes = [b for b in boxes if b[0] >= marker[1]]  # the boxes after the line are the answer
    if boxes:
        return _from_boxes(text, boxes, region)
    return _bare(text, region, junk is not None)


def _boxes(text: str, region: int, pairs: dict[int, int]) -> tuple[list[tuple[int, int]], int]:
    """Top-level box contents as (start, end); and the start of the last unclosed box (-1: none)."""
    found: list[tuple[int, int]] = []
    unclosed = -1
    covered = -1  # end of the last top-level box: boxes inside it are not top-level
    for m in _BOX.finditer(text, region):
        brace = m.end() - 1
        if brace < covered:
            continue
        close = pairs.get(brace)
        if close is None:
            unclosed = m.start()
            continue
        found.append((brace + 1, close))
        covered = close
    for m in _BRACELESS_BOX.finditer(text, region):  # "\\boxed 5": TeX boxes the next token
        if not any(s <= m.start() < e for s, e in found):
            found.append((m.start(1), m.end(1)))
    return sorted(found), unclosed


def _paragraph_start(text: str, pos: int, region: int) -> int:
    start = region
    for m in _PARA.finditer(text, region, pos):
        start = m.end()
    return start


def _last_marker(text: str, region: int) -> tuple[int, int, str] | None:
    """(start, end, kind) of the last final-answer phrase or heading; the answer follows `end`."""
    best = None
    for m in _PHRASE.finditer(text, region):
        best = (m.start(), m.end(), "phrase")
    for m in _HEADING.finditer(text, region):
        if best is None or m.start() > best[0]:
            best = (m.start(), m.end(), "heading")
    return best


def _after_marker(text: str, marker: tuple[int, int, str], boxes: list[tuple[int, int]]) -> Extraction:
    start, end, kind = marker
    after = [b for b in boxes if b[0] >= end]
    if kind == "heading":
        line = _next_line(text, end)
        if line is None:
            return _none("answer heading without an answer")
        inside = [b for b in after if b[1] <= line[1]]
        if inside:
            return _from_boxes(text, inside, start)
        line_after = _PHRASE.search(text, line[0], line[1])  # "**Final Answer**\nThe final answer is 5"
        return _clean(text, line_after.end() if line_after else line[0], line[1], "heading")
    stop = _HOPE.search(text, end)
    line_end = text.find("\n", end)
    line_end = len(text) if line_end < 0 else line_end
    stop_at = min(stop.start() if stop else len(text), line_end)
    stop_at = max(stop_at, _display_end(text, end))  # "Answer \\[\n 9 \n\\]": the display is the answer
    inside = [b for b in after if b[1] <= stop_at]
    if inside:
        return _from_boxes(text, inside, start)
    return _clean(text, end, stop_at, "phrase")


def _display_end(text: str, pos: int) -> int:
    """End of the math display ($$, \\[; inline math stays on its line) opening at `pos`, or -1."""
    start, _ = trim(text, pos, len(text))
    for opener, closer in MATH_ENV[:2]:
        if text.startswith(opener, start):
            close = find_closer(text, closer, start + len(opener), len(text))
            return close + len(closer) if close > 0 else -1
    return -1


def _next_line(text: str, pos: int) -> tuple[int, int] | None:
    for m in re.finditer(r"[^\n]*", text[pos:]):
        if m.group().strip():
            return pos + m.start(), pos + m.end()
    return None


def _clean(text: str, start: int, end: int, reason: str) -> Extraction:
    """Trim the answer: a leading math span is the answer; else the text up to the sentence end."""
    start, end = trim(text, start, end)
    for opener, closer in MATH_ENV:
        if text.startswith(opener, start):
            close = find_closer(text, closer, start + len(opener), end if closer != "$$" else len(text))
            if close > start:
                start, end = trim(text, start + len(opener), close)
                break
    else:
        m = SENTENCE_END.search(text, start, end)
        if m and _sentence_ends_there(text, m.start(), end):
            end = m.start()
        if _prose_words(text[start:end]) >= 2:  # "Final Answer: The volume of $V$ is 120."
            value = value_in_sentence(text, start, end) or only_value(text, start, end)
            if value is not None:
                start, end = value
    while end > start and text[end - 1] in TRAILING + "$":
        end -= 1
    while start < end and text[start] in "$*":
        start += 1
    start, end = trim(text, start, end)
    if start >= end:
        return _none("final-answer phrase without an answer")
    return Extraction(text[start:end], start, end, reason)


def _prose_words(s: str) -> int:
    return len(_WORD.findall(_TEXT_ARG.sub(" ", re.sub(r"\$[^$]*\$", " ", s))))


def _sentence_ends_there(text: str, pos: int, end: int) -> bool:
    """A '.' ends the answer only when prose follows ("5. Next, ..."), not a decimal or a final period."""
    return text[pos] == "\n" or bool(text[pos + 1 : end].strip())


def _from_boxes(text: str, boxes: list[tuple[int, int]], region: int) -> Extraction:
    para_start = _paragraph_start(text, boxes[-1][0], region)
    final = [b for b in boxes if b[0] >= para_start] or boxes[-1:]
    final = [_unwrap(text, s, e) for s, e in final]
    if any(_BOX.search(text, s, e) for s, e in final):
        return _none("boxes inside a \\boxed{}")  # "\\boxed{3 \\boxed{5}}": a hedge in one box
    values = {_canon(text[s:e]) for s, e in final}
    if len(values) > 1:
        return _none(f"{len(values)} different boxed answers")
    start, end = trim(text, *final[-1])
    if start >= end:
        return _none("empty \\boxed{}")
    return Extraction(text[start:end], start, end, "boxed")


def _unwrap(text: str, start: int, end: int) -> tuple[int, int]:
    """The inside of a box that holds only a box ("\\boxed{\\boxed{5}}" is 5)."""
    while True:
        s, e = trim(text, start, end)
        m = _BOX.match(text, s, e)
        if not m or match_braces(text, m.end() - 1).get(m.end() - 1) != e - 1:
            return start, end
        start, end = m.end(), e - 1


def _bare(text: str, region: int, turn_ended: bool = False) -> Extraction:
    """The whole answer region, or its last line, when it is one short math expression."""
    start, end = trim(text, region, len(text))
    if start >= end:
        return _none("nothing after the reasoning block" if region else "empty completion")
    last = text.rfind("\n", start, end) + 1
    for s in (start, max(start, last)):
        found = _clean(text, s, end, "bare") if _looks_bare(text[s:end], whole=s == start) else None
        if found is not None and found.answer is not None:
            return found
    hope = _HOPE.search(text, start, end)
    value = stated_value(text, start, trim(text, start, hope.start() if hope else end)[1], turn_ended or bool(hope))
    if isinstance(value, str):
        return _none(value)
    found = _clean(text, *value, "sentence")
    return found if found.answer is not None else _none("no \\boxed{} answer or final-answer phrase")


def _looks_bare(line: str, whole: bool) -> bool:
    """A short text that is an answer, not prose: few words outside \\text{}; a last line must be
    delimited math ("$x = 5$", "\\[ 12 \\]") so a sentence's tail is never read as its answer."""
    s = line.strip()
    if not s or len(s) > MAX_BARE_CHARS or "\n" in s:
        return False
    if not whole and not any(s.startswith(o) and s.rstrip(".").endswith(c) for o, c in MATH_ENV):
        return False
    return len(_WORD.findall(_TEXT_ARG.sub(" ", s))) <= 1


def _canon(s: str) -> str:
    return re.sub(r"\s+", "", s)


def gold_answer(gold: str) -> str:
    """The gold through the same reader as completions: "$\\frac12$", "The answer is 5." or a whole
    reference solution with a box give their answer; anything else is its own answer."""
    found = extract_answer(gold, think_tags=None)
    if found.answer is not None:
        return found.answer
    if found.reason.endswith("different boxed answers"):  # a gold "\\boxed{1}\\boxed{2}" lists both
        boxes, _ = _boxes(gold, 0, match_braces(gold))
        start = _paragraph_start(gold, boxes[-1][0], 0)
        return ", ".join(gold[s:e].strip() for s, e in boxes if s >= start)
    return gold.strip()
