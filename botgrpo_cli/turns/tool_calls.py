"""Tool calls in a model turn's text, in the formats chat templates teach their models.

- Hermes / Qwen 2.5 / Qwen 3 / SmolLM3: one `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`
  block per call (any number in one turn);
- Llama 3.1 / 3.2 JSON: the whole turn is one `{"name": ..., "parameters": {...}}` object (or a list
  of them), optionally after `<|python_tag|>`.

The JSON is read with json.loads (data, never code). A block that does not hold a call (bad JSON, no
name, arguments that are not an object) is still a call: a bad one, answered with an error the model
can read, and counted.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

HERMES = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.DOTALL)
PYTHON_TAG = "<|python_tag|>"


@dataclass(frozen=True)
class ToolCall:
    name: str  # "" when the call named no tool
    arguments: dict[str, Any] = field(default_factory=dict)
    error: str | None = None  # why the call could not be read (then it is not run)
    raw: str = ""  # the call's text as the model wrote it

    def as_message(self) -> dict[str, Any]:
        """The call as an assistant message's tool_calls entry (OpenAI / transformers form)."""
        return {"type": "function", "function": {"name": self.name, "arguments": self.arguments}}


def _call(obj: Any, raw: str) -> ToolCall:
    """A decoded JSON value -> a call (a bad one when it is not {"name": str, "arguments": object})."""
    if not isinstance(obj, dict):
        return ToolCall("", error="a tool call must be a JSON object with a name and arguments", raw=raw)
    name = obj.get("name")
    args = obj.get("arguments", obj.get("parameters", {}))
    if isinstance(args, str):  # some models write the arguments as a JSON string
        try:
            args = json.loads(args)
        except json.JSONDecodeError:
            pass
    if not isinstance(name, str) or not name:
        return ToolCall("", error="the tool call names no tool (\"name\" must be a non-empty string)", raw=raw)
    if not isinstance(args, dict):
        return ToolCall(name, error="the tool call's arguments must be a JSON object", raw=raw)
    return ToolCall(name, args, raw=raw)


def _decoded(raw: str) -> ToolCall | list[ToolCall]:
    try:
        obj = json.loads(raw)
    except json.JSONDecodeError as err:
        return ToolCall("", error=f"the tool call is not valid JSON ({err.msg} at character {err.pos})", raw=raw)
    if isinstance(obj, list):
        return [_call(o, raw) for o in obj] or [ToolCall("", error="the tool call list is empty", raw=raw)]
    return _call(obj, raw)


def parse_tool_calls(text: str) -> list[ToolCall]:
    """Every tool call in one model turn (in order); [] when the turn calls no tool (an answer)."""
    if "<tool_call>" in text:
        calls: list[ToolCall] = []
        for m in HERMES.finditer(text):
            got = _decoded(m.group(1))
            calls.extend(got if isinstance(got, list) else [got])
        return calls
    body = text.strip()
    if body.startswith(PYTHON_TAG):
        body = body[len(PYTHON_TAG):].strip()
    names_a_call = '"name"' in body and ('"parameters"' in body or '"arguments"' in body)
    if body[:1] in "{[" and body[-1:] in "}]" and names_a_call:
        # Llama 3 JSON: the whole turn is the call
        got = _decoded(body)
        return got if isinstance(got, list) else [got]
    return []
