"""The verl reward manager's work: dense token rewards from the real math service."""

from __future__ import annotations

import torch
from transformers import AutoTokenizer



def test_dense_rewards_mark_the_wrong_step(tiny_arith_model_dir):
    from botgrpo_cli.integrations.verl import DenseServiceReward, assemble  # here: it imports verl (and ray)

    tok = AutoTokenizer.from_pretrained(tiny_arith_model_dir)
    text = "3 * 4 = 12\n\n12 + 5 = 18\n\n\\boxed{18}"  # second step wrong, answer wrong
    ids = tok(text, add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
    prompt_ids = tok("Ana has 3 bags with 4 pens each. She finds 5 more.", add_special_tokens=False)["input_ids"]
    reward = DenseServiceReward(tok, {"service": "math", "options": {"steps": True}})
    try:
        wrong = reward.score_row(prompt_ids, ids, {"reward_model": {"ground_truth": "17"}})
        right = reward.score_row(prompt_ids, ids, {"reward_model": {"ground_truth": "18"}})
    finally:
        reward.close()
    assert len(wrong["reward_score"]) == len(ids)
    assert wrong["reward_extra_info"] == {"score": 0.0, "scored": 1.0}
    assert right["reward_extra_info"]["score"] == 1.0
    second_step = text.index("12 + 5")
    pieces = [tok.decode([i], skip_special_tokens=True) for i in ids]
    starts = [sum(len(p) for p in pieces[:k]) for k in range(len(ids))]
    first = [r for r, s in zip(wrong["reward_score"], starts) if s < text.index("\n\n")]
    inside = [r for r, s, p in zip(wrong["reward_score"], starts, pieces) if second_step <= s < second_step + 11 and p]
    # correct step: the sequence score 0 plus its verified-step credit (+0.25)
    assert first and all(r == 0.25 for r in first)
    assert inside and min(inside) < 0  # the wrong step's tokens carry its span's negative reward
    dense = assemble(torch.zeros(2, len(ids) + 3, dtype=torch.long), [wrong["reward_score"], right["reward_score"]])
    assert dense.shape == (2, len(ids) + 3) and dense[:, len(ids):].abs().sum() == 0
