"""Thinking budget: once a row has spent `budget` tokens inside its thinking block, the block's
close tag is forced token by token, and the model goes on to answer (budget forcing, as
reasoning-model RL and inference setups cap reasoning length). Forced tokens stay in the
completion and are trained on like sampled ones: they are what the policy then conditions on.

Tags are matched as the token sequences the tokenizer encodes them to (reasoning models have
`<think>` and `</think>` as single added tokens). A prompt that already opened the block (a
chat template ending in `<think>`) starts the row inside it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from botgrpo_rewards.protocol import opens_reasoning

BEFORE, INSIDE, FORCING, AFTER = "before", "inside", "forcing", "after"


@dataclass
class RowState:
    phase: str = BEFORE
    spent: int = 0  # tokens generated inside the block
    forced: int = 0  # close-tag tokens forced so far
    tail: list[int] = field(default_factory=list)  # the last few tokens, to spot a multi-token tag


def _ends_with(tail: list[int], ids: list[int]) -> bool:
    return len(tail) >= len(ids) and tail[-len(ids):] == ids


def advance(state: RowState, token: int, open_ids: list[int], close_ids: list[int], budget: int) -> RowState:
    """The state after `token` was generated (pure: returns a new state)."""
    tail = (state.tail + [token])[-max(len(open_ids), len(close_ids)):]
    if state.phase == BEFORE:
        if _ends_with(tail, open_ids):
            return RowState(INSIDE, 0, 0, tail)
        return RowState(AFTER if _ends_with(tail, close_ids) else BEFORE, 0, 0, tail)
    if state.phase == INSIDE:
        if _ends_with(tail, close_ids):
            return RowState(AFTER, state.spent + 1, 0, tail)
        spent = state.spent + 1
        return RowState(FORCING if spent >= budget else INSIDE, spent, 0, tail)
    if state.phase == FORCING:
        forced = state.forced + 1
        return RowState(AFTER if forced >= len(close_ids) else FORCING, state.spent, forced, tail)
    return RowState(AFTER, state.spent, state.forced, tail)


def start_state(opened: bool) -> RowState:
    return RowState(INSIDE if opened else BEFORE)


def forced_token(state: RowState, close_ids: list[int]) -> int | None:
    return close_ids[state.forced] if state.phase == FORCING else None


def thinking_budget(tok: Any, params: Any, prompts: list[str], n: int) -> "ThinkingBudget | None":
    """The budget of one generate call for `params` (None without one); rows i*n .. i*n+n-1
    continue prompts[i]."""
    if params.thinking_budget is None or params.think_tags is None:
        return None
    opened = [opens_reasoning(p, params.think_tags) for p in prompts for _ in range(n)]
    return ThinkingBudget(tok, params.think_tags, params.thinking_budget, opened)


class ThinkingBudget:
    """The budget over the rows of one generate call. Engines call `force` on each step's logits
    and `observe` with the tokens chosen (rows are the call's row numbers, so an engine that drops
    finished rows passes the ones still live); as a transformers logits processor it does both."""

    def __init__(self, tok: Any, tags: tuple[str, str], budget: int, opened: list[bool]):
        self.open_ids = tok.encode(tags[0], add_special_tokens=False)
        self.close_ids = tok.encode(tags[1], add_special_tokens=False)
        self.budget = budget
        self.states = [start_state(o) for o in opened]
        self.calls = 0

    def observe(self, rows: list[int], tokens: list[int]) -> None:
        for row, token in zip(rows, tokens):
            self.states[row] = advance(self.states[row], token, self.open_ids, self.close_ids, self.budget)

    def force(self, rows: list[int], scores: torch.Tensor) -> torch.Tensor:
        """scores (len(rows), V): a row whose budget is spent may only emit the next close-tag token."""
        for k, row in enumerate(rows):
            token = forced_token(self.states[row], self.close_ids)
            if token is not None:
                scores[k] = torch.finfo(scores.dtype).min
                scores[k, token] = 0.0
        return scores

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        rows = list(range(input_ids.shape[0]))
        if self.calls:  # the newest token of each row was chosen after the previous call
            self.observe(rows, input_ids[:, -1].tolist())
        self.calls += 1
        return self.force(rows, scores)
