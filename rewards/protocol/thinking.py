"""The thinking split, shared by the client (rollout thinking budgets, task prompts) and every service:
where a reasoning model's answer starts, after its thinking block (`<think> ... </think>`).

The first close tag ends the reasoning, as the reasoning parsers of vLLM and SGLang read it; a
reasoning cut off by the length limit (opened, never closed) holds no answer at all. The request
options that choose the tags (think_tags, think_open) are read by botgrpo_rewards.thinking.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_TAGS = ("<think>", "</think>")


@dataclass(frozen=True)
class Reasoning:
    """How one completion splits into reasoning and answer (code points)."""

    answer_start: int  # the answer is completion[answer_start:]
    truncated: bool  # the reasoning never closed: there is no answer
    present: bool  # the completion has reasoning at all


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
