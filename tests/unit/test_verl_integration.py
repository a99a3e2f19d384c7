"""The verl adapter: `bot_grpo` in verl's estimator signature and registry, dense token reward rows."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from botgrpo_cli.algos import compute_advantages
from botgrpo_cli.integrations.service import Scored
from botgrpo_rewards.protocol import ScoreResponse, Span


@pytest.fixture(scope="module")
def adapter():
    """botgrpo_cli.integrations.verl, imported by the worker that runs these tests only: importing it
    registers with verl, which brings ray (seconds each worker would pay at collection)."""
    import botgrpo_cli.integrations.verl as adapter

    return adapter


def _batch(seed: int = 0, groups: int = 3, size: int = 4, width: int = 7):
    g = torch.Generator().manual_seed(seed)
    b = groups * size
    r = torch.randn(b, width, generator=g)
    lengths = torch.randint(1, width + 1, (b,), generator=g)
    mask = (torch.arange(width)[None, :] < lengths[:, None]).float()
    uids = np.array([f"uid-{k}" for k in range(groups) for _ in range(size)], dtype=object)
    return r, mask, uids


def test_estimator_equals_compute_advantages_on_uid_groups(adapter):
    r, mask, uids = _batch()
    adv, returns = adapter.bot_grpo_advantage(r, mask, uids)
    groups = torch.arange(len(uids)) // 4
    expected = compute_advantages("bot_grpo", token_rewards=r, scores=r.mean(1), mask=mask, group_ids=groups)
    assert torch.allclose(adv, expected, atol=1e-6)
    assert torch.equal(adv, returns)
    assert adv[mask == 0].abs().max() == 0


def test_estimator_reads_norm_switch_from_config(adapter):
    r, mask, uids = _batch(seed=1)
    adv, _ = adapter.bot_grpo_advantage(r, mask, uids, config={"norm_adv_by_std_in_grpo": False})
    groups = torch.arange(len(uids)) // 4
    expected = compute_advantages("bot_grpo", token_rewards=r, scores=r.mean(1), mask=mask, group_ids=groups,
                                  scale="none")
    assert torch.allclose(adv, expected, atol=1e-6)


def test_registered_in_verl_and_drop_in_for_verl_grpo(adapter):
    core_algos = pytest.importorskip("verl.trainer.ppo.core_algos")

    fn = core_algos.get_adv_estimator_fn("bot_grpo")
    assert fn is adapter.bot_grpo_advantage
    r, mask, uids = _batch(seed=2)
    adv, _ = fn(token_level_rewards=r, response_mask=mask, index=uids, config=None)
    groups = torch.arange(len(uids)) // 4
    assert torch.allclose(adv, compute_advantages("bot_grpo", token_rewards=r, scores=r.mean(1), mask=mask,
                                                  group_ids=groups), atol=1e-6)
    # Outcome rewards: verl's GRPO reads the score on the last token; BoT-GRPO the same score on every
    # token. The two must agree (the drop-in property), against verl's own code.
    scores = torch.randn(len(uids), generator=torch.Generator().manual_seed(3))
    lengths = mask.sum(1).long()
    outcome = torch.zeros_like(r)
    outcome[torch.arange(len(uids)), lengths - 1] = scores
    verl_adv, _ = core_algos.compute_grpo_outcome_advantage(outcome, mask, uids, epsilon=1e-6)
    ours, _ = fn(token_level_rewards=scores[:, None] * mask, response_mask=mask, index=uids, epsilon=1e-6)
    assert torch.allclose(ours, verl_adv, atol=1e-5)


def test_token_reward_rows_project_spans_and_zero_failed_rows(adapter):
    ok = ScoreResponse(id="0", status="ok", score=1.0, spans=[Span(2, 3, -1.0)])
    failed = ScoreResponse(id="1", status="timeout")
    scored = Scored([ok, failed], ["abcd", "xy"])
    rows = adapter.token_reward_rows(scored, [[(0, 2), (2, 4), (4, 4)], [(0, 1), (1, 2)]], lambda_tok=1.0)
    assert rows == [pytest.approx([1.0, 0.5, 1.0]), [0.0, 0.0]]
    dense = adapter.assemble(torch.zeros(2, 5, dtype=torch.long), rows)
    assert dense.tolist() == [pytest.approx([1.0, 0.5, 1.0, 0.0, 0.0]), [0.0] * 5]
