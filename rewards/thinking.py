"""Where a reasoning model's answer starts: after its thinking block (`<think> ... </think>`).

Every service reads the answer (a boxed value, a code block) only from the text after the reasoning,
so nothing written while thinking is graded, and a reasoning cut off by the length limit (opened,
never closed) holds no answer at all. Request options, shared by all services:

  think_tags  [open, close] (default ["<think>", "</think>"]); null turns the rule off (the whole
              completion is the answer)
  think_open  true when the prompt already opened the reasoning (chat templates that end in
              "<think>"): the completion starts inside it, so without a close tag it is all reasoning

The split itself (split_reasoning, shared with the client) lives in botgrpo_rewards.protocol.thinking.
"""

from __future__ import annotations

from typing import Any

from botgrpo_rewards.backend import BackendError
from botgrpo_rewards.protocol import DEFAULT_TAGS, Reasoning, split_reasoning



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


def reasoning_of(text: str, options: dict[str, Any]) -> Reasoning:
    """`split_reasoning` with the request's think options."""
    tags, opened = think_options(options)
    return split_reasoning(text, tags, opened)


def strip_think_options(options: dict[str, Any]) -> dict[str, Any]:
    """The options without the shared think ones, for services that check their own option names."""
    return {k: v for k, v in options.items() if k not in ("think_tags", "think_open")}
