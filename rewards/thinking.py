"""Where a reasoning model's answer starts: after its thinking block (`<think> ... </think>`).

Every service reads the answer (a boxed value, a code block) only from the text after the reasoning,
so nothing written while thinking is graded, and a reasoning cut off by the length limit (opened,
never closed) holds no answer at all. Request options, shared by all services:

  think_tags  [open, close] (default ["<think>", "</think>"]); null turns the rule off (the whole
              completion is the answer)
  think_open  true when the prompt already opened the reasoning (chat templates that end in
              "<think>"): the completion starts inside it, so without a close tag it is all reasoning

The first close tag ends the reasoning, as the reasoning parsers of vLLM and SGLang read it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from botgrpo_rewards.backend import BackendError

DEFAULT_TAGS = ("<think>", "</think>")


@dataclass(frozen=True)
class Reasoning:
    """How one completion splits into reasoning and answer (code points)."""

    answer_start: int  # the answer is completion[answer_start:]
    truncated: bool  # the reasoning never closed: there is no answer
    present: bool  # the completion has reasoning at all


def think_options(options: dict[str, Any]) -> tuple[tuple[str, str] | None, bool]:
    """(tags or None, think_open) from request options; a malformed value is a bad request."""
    tags = options.get("think_tags", list(DEFAULT_TAGS))
    if tags is not None and (not isinstance(tags, (list, tuple)) or len(tags) != 2
                             or not all(isinstance(t, str) and t for t in tags)):
        raise BackendError("option think_tags must be [open, close] (two non-empty strings) or null", "bad_request")
    opened = options.get("think_open", False)
    if not isinstance(opened, bool):
        raise BackendError("option think_open must be true or false", "bad_request")
    return (tuple(tags) if tags is not None else None), opened  # type: ignore[return-value]


def split_reasoning(text: str, tags: tuple[str, str] | None = DEFAULT_TAGS, opened: bool = False) -> Reasoning:
    """Split `text` at its thinking block. No tags found (and not opened by the prompt): all answer."""
    if tags is None:
        return Reasoning(0, False, False)
    open_tag, close_tag = tags
    start = text.find(open_tag)
    search_from = 0 if opened or start < 0 else start + len(open_tag)
    close = text.find(close_tag, search_from)
    if close >= 0:  # also without an open tag: the template opened it, the model closed it
        return Reasoning(close + len(close_tag), False, True)
    if opened or start >= 0:
        return Reasoning(len(text), True, True)
    return Reasoning(0, False, False)


def opens_reasoning(prompt_text: str, tags: tuple[str, str]) -> bool:
    """Whether a formatted prompt ends inside an open thinking block (chat templates that start the
    reasoning for the model, as DeepSeek-R1's does): then the completion begins inside it."""
    open_at, close_at = prompt_text.rfind(tags[0]), prompt_text.rfind(tags[1])
    return open_at >= 0 and open_at > close_at and not prompt_text[open_at + len(tags[0]):].strip()


def reasoning_of(text: str, options: dict[str, Any]) -> Reasoning:
    """`split_reasoning` with the request's think options."""
    tags, opened = think_options(options)
    return split_reasoning(text, tags, opened)


def strip_think_options(options: dict[str, Any]) -> dict[str, Any]:
    """The options without the shared think ones, for services that check their own option names."""
    return {k: v for k, v in options.items() if k not in ("think_tags", "think_open")}
