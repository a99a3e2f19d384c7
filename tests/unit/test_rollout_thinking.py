"""The thinking budget: the close tag is forced after `budget` reasoning tokens (rule, then real generate)."""

from __future__ import annotations

import pytest
import torch
from rollout_models import model, tokenizer

from botgrpo_cli.rollout import FastEngine, HFEngine, SamplingParams
from botgrpo_cli.rollout.thinking import AFTER, FORCING, INSIDE, RowState, advance, forced_token
from botgrpo_rewards.protocol import split_reasoning

OPEN, CLOSE = [5, 6], [7, 8]  # multi-token tags, as a tokenizer without added tags encodes them


def run(tokens: list[int], budget: int, opened: bool = False) -> tuple[RowState, list[int]]:
    """Feed `tokens`, but whenever the rule forces a token, that token is generated instead."""
    state, out, pending = RowState(INSIDE if opened else "before"), [], list(tokens)
    while pending:
        token = forced_token(state, CLOSE)
        token = pending.pop(0) if token is None else token
        out.append(token)
        state = advance(state, token, OPEN, CLOSE, budget)
    return state, out


def test_close_is_forced_after_the_budget_token_by_token():
    state, out = run([1, 5, 6, 9, 9, 9, 9, 9, 2, 2], budget=3)
    assert out == [1, 5, 6, 9, 9, 9, 7, 8, 9, 9, 2, 2]  # 3 reasoning tokens, then the whole close tag
    assert state.phase == AFTER


def test_a_block_closed_in_time_is_left_alone_and_nothing_is_forced_after():
    state, out = run([5, 6, 9, 7, 8, 9, 9, 5, 6, 9, 9, 9, 9], budget=3)
    assert out == [5, 6, 9, 7, 8, 9, 9, 5, 6, 9, 9, 9, 9]
    assert state.phase == AFTER  # one block per completion: a second open tag is text


def test_prompt_opened_block_counts_from_the_first_token():
    _, out = run([9, 9, 9, 9], budget=2, opened=True)
    assert out == [9, 9, 7, 8, 9, 9]
    assert advance(RowState(INSIDE, 1), 9, OPEN, CLOSE, 2).phase == FORCING


@pytest.fixture(scope="module", params=[HFEngine, FastEngine], ids=["hf", "fast"])
def engine(request):
    """Both CPU engines, on a tokenizer that has the tags as whole tokens (as reasoning models do)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    tok = tokenizer()
    tok.add_tokens(["<think>", "</think>"])
    yield request.param(model("qwen2", tok), tok)
    torch.set_num_threads(threads)


def test_generate_forces_the_close_tag_at_the_budget(engine):
    tags = ("<think>", "</think>")
    close_id = engine.tok.convert_tokens_to_ids("</think>")
    prompts = ["count the apples: <think>", "x = y * 2; <think>\n"]  # the template opened the block
    params = SamplingParams(max_new_tokens=20, temperature=1.5, seed=3, thinking_budget=6, think_tags=tags)
    batch = engine.generate(prompts, 4, params)
    forced = 0
    for row, text in zip(batch.completion_ids.tolist(), batch.texts):
        valid = row[: len(batch.offsets[batch.texts.index(text)])]
        eos_early = engine.tok.eos_token_id in valid[:6] or close_id in valid[:6]
        if not eos_early:
            assert valid[6] == close_id, valid  # exactly 6 reasoning tokens, then </think>
            reasoning = split_reasoning(text, tags, opened=True)
            assert not reasoning.truncated
            forced += 1
    assert forced >= 4
    free = engine.generate(prompts, 4, SamplingParams(max_new_tokens=20, temperature=1.5, seed=3))
    assert sum(close_id in r for r in free.completion_ids.tolist()) < forced  # without a budget: rarely closed
