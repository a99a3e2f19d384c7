"""Messages appended after a model turn, as the text the chat template puts between that turn's
content and the next turn's generation prompt.

The template renders a short conversation whose last assistant message is a sentinel, followed by
the new messages and the generation prompt; the text after the sentinel is what goes between the
model's turn and its next one (the assistant's end-of-turn marker included). When the model ended
its turn with an end token whose text opens that tail (`<|im_end|>`), the model's token already
wrote it and it is not added twice. The model's own tokens are never re-rendered: the next turn
continues from the very ids sampled (rollout/turns.py).

A tokenizer without a chat template (the tiny bootstrapped models) gets plain text: each message
on its own paragraph, a tool's answer inside <tool_response> tags. The text ends at the message's
last character: the blank line before the model's next turn is the model's to write, because a
pre-tokenizer that joins whitespace to the word after it (the bootstrapped one does) made
"\n\nimport" one token in the warm start's transcripts, and a prompt ending in "\n\n" would split it.
"""

from __future__ import annotations

from typing import Any

SENTINEL = "\ue000turn\ue001"  # private-use code points: no real message holds them


def has_template(tok: Any) -> bool:
    return bool(getattr(tok, "chat_template", None))


def plain_message(message: dict) -> str:
    """One message as plain text (no chat template)."""
    content = str(message.get("content", ""))
    if message.get("role") == "tool":
        return f"<tool_response>\n{content}\n</tool_response>"
    return content


def first_prompt(tok: Any, messages: list[dict], tools: list[dict] | None,
                 template_kwargs: dict[str, Any] | None) -> str:
    """The first prompt of a conversation given as messages (an environment's reset)."""
    if not has_template(tok):
        return "\n\n".join(plain_message(m) for m in messages) + "\n\n"
    return tok.apply_chat_template(messages, tools=tools or None, tokenize=False, add_generation_prompt=True,
                                   **(template_kwargs or {}))


def appended_text(tok: Any, messages: list[dict], tools: list[dict] | None,
                  template_kwargs: dict[str, Any] | None, ended_by: str | None) -> str:
    """The text between a model turn and the next one when `messages` come after it; `ended_by`:
    the text of the end token that closed the model's turn (None when it stopped otherwise)."""
    if not has_template(tok):  # no trailing blank line: the model writes it, as in a warm start (see the docstring)
        return "\n\n" + "\n\n".join(plain_message(m) for m in messages)
    chat = [{"role": "user", "content": "."}, {"role": "assistant", "content": SENTINEL}, *messages]
    text = tok.apply_chat_template(chat, tools=tools or None, tokenize=False, add_generation_prompt=True,
                                   **(template_kwargs or {}))
    at = text.rfind(SENTINEL)
    if at < 0:
        raise ValueError("the chat template dropped the assistant's message; it cannot render multi-turn rollouts")
    tail = text[at + len(SENTINEL):]
    if ended_by and tail.startswith(ended_by):
        tail = tail[len(ended_by):]
    return tail


def shows_tools(tok: Any, tools: list[dict]) -> bool:
    """Whether the chat template puts the tool schemas in the prompt (some, e.g. SmolLM2's, ignore them)."""
    if not has_template(tok):
        return False
    chat = [{"role": "user", "content": "."}]
    plain = tok.apply_chat_template(chat, tokenize=False, add_generation_prompt=True)
    return tok.apply_chat_template(chat, tools=tools, tokenize=False, add_generation_prompt=True) != plain
