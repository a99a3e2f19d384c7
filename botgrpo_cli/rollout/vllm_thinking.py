"""rollout.thinking_budget inside vLLM: a logits processor that runs the lean loop's rule
(rollout/thinking.py) on each request's own tokens, so a row that has spent its budget inside the
thinking block may only write the block's close tag, token by token.

A request carries its budget in `SamplingParams.extra_args[KEY]`: the tags' token ids, the budget,
and whether its prompt already opened the block. The engine's log-prob of a forced token is 0 (the
processor left it no choice); `forced_positions` finds those tokens again so the trainer treats them
as the lean loop does, as its own.
"""

from __future__ import annotations

from typing import Any

import torch
from vllm.v1.sample.logits_processor import BatchUpdate, LogitsProcessor
from vllm.v1.sample.logits_processor.builtin import process_dict_updates

from botgrpo_cli.rollout.thinking import RowState, advance, forced_token, start_state

KEY = "botgrpo_thinking"


def request_args(open_ids: list[int], close_ids: list[int], budget: int, opened: bool) -> dict[str, Any]:
    return {KEY: {"open": list(open_ids), "close": list(close_ids), "budget": int(budget), "opened": bool(opened)}}


def check_args(extra: Any) -> None:
    """A request's extra_args as a server takes them: only KEY, with lists of token ids and an int."""
    if extra is None:
        return
    spec = extra.get(KEY) if isinstance(extra, dict) and set(extra) == {KEY} else None
    ok = isinstance(spec, dict) and set(spec) == {"open", "close", "budget", "opened"} and \
        all(isinstance(spec[k], list) and spec[k] and all(type(t) is int for t in spec[k]) for k in ("open", "close")) \
        and type(spec["budget"]) is int and spec["budget"] >= 0 and isinstance(spec["opened"], bool)
    if not ok:
        raise ValueError(f"extra_args must be {{{KEY!r}: {{open, close, budget, opened}}}}")


class _Row:
    def __init__(self, spec: dict[str, Any], output_ids: list[int]):
        self.open, self.close, self.budget = spec["open"], spec["close"], spec["budget"]
        self.state: RowState = start_state(spec["opened"])
        self.output = output_ids  # vLLM's running list of this request's tokens
        self.seen = 0

    def catch_up(self) -> None:
        for token in self.output[self.seen:]:
            self.state = advance(self.state, token, self.open, self.close, self.budget)
        self.seen = len(self.output)


class ThinkingBudget(LogitsProcessor):
    """The budget rule over vLLM's persistent batch (rows are batch indices)."""

    def __init__(self, vllm_config: Any, device: torch.device, is_pin_memory: bool):
        self.rows: dict[int, _Row] = {}

    def is_argmax_invariant(self) -> bool:
        return False  # it changes what greedy picks

    def update_state(self, batch_update: BatchUpdate | None) -> None:
        def new(params: Any, _prompt_ids: Any, output_ids: list[int]) -> _Row | None:
            spec = (getattr(params, "extra_args", None) or {}).get(KEY)
            return None if spec is None else _Row(spec, output_ids)

        process_dict_updates(self.rows, batch_update, new)
        for row in self.rows.values():
            row.catch_up()

    def apply(self, logits: torch.Tensor) -> torch.Tensor:
        for index, row in self.rows.items():
            token = forced_token(row.state, row.close)
            if token is not None:
                logits[index] = float("-inf")
                logits[index, token] = 0.0
        return logits


def forced_positions(tokens: list[int], spec: dict[str, Any]) -> list[int]:
    """Positions in `tokens` (a completion generated under `spec`) that the rule forced."""
    state, out = start_state(spec["opened"]), []
    for k, token in enumerate(tokens):
        if forced_token(state, spec["close"]) is not None:
            out.append(k)
        state = advance(state, token, spec["open"], spec["close"], spec["budget"])
    return out
