"""The conventions docs/conventions.md states against verl, checked against verl's own code: where
botgrpo and verl agree, and the two places they differ by design (one-member groups, seq-mean rows)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from botgrpo_cli.algos import compute_advantages
from botgrpo_cli.algos.losses import aggregate



@pytest.fixture(scope="module")
def core_algos():
    """verl's own code, imported by the worker that runs these tests only (verl brings ray: seconds)."""
    return pytest.importorskip("verl.trainer.ppo.core_algos")


def _verl_grpo(core_algos, scores: torch.Tensor, mask: torch.Tensor, groups: list[int], eps: float) -> torch.Tensor:
    outcome = torch.zeros(mask.shape)
    outcome[torch.arange(len(scores)), mask.sum(1) - 1] = scores  # verl reads the score on the last token
    adv, _ = core_algos.compute_grpo_outcome_advantage(outcome, mask, np.array([str(g) for g in groups],
                                                                               dtype=object), epsilon=eps)
    return adv


def test_grpo_equals_verl_with_its_eps_except_one_member_groups(core_algos):
    scores = torch.tensor([1.0, 0.0, 0.5, 0.2, 0.7, 0.9])
    mask = torch.ones(6, 4, dtype=torch.long)
    groups = [0, 0, 0, 1, 1, 2]  # group 2 has one member
    ours = compute_advantages("grpo", token_rewards=scores[:, None] * mask, scores=scores, mask=mask.bool(),
                              group_ids=torch.tensor(groups), eps=1e-6)
    verl = _verl_grpo(core_algos, scores, mask, groups, eps=1e-6)
    torch.testing.assert_close(ours[:5], verl[:5], atol=1e-6, rtol=1e-6)
    assert bool((ours[5] == 0).all())  # botgrpo (and TRL): a group of one has nothing to compare with
    torch.testing.assert_close(verl[5], torch.full((4,), 0.9 / (1 + 1e-6)))  # verl: mean 0, std 1


def test_seq_mean_divides_by_every_row_here_by_non_empty_rows_in_verl(core_algos):
    loss = torch.tensor([[1.0, 3.0], [2.0, 2.0], [5.0, 7.0]])
    mask = torch.tensor([[1, 1], [1, 0], [0, 0]])  # the last row is empty (e.g. a failed score)
    ours = aggregate(loss, mask, "seq_mean_token_mean")
    verl = core_algos.agg_loss(loss, mask.float(), "seq-mean-token-mean")
    assert float(ours) == pytest.approx((2.0 + 2.0) / 3)
    assert float(verl) == pytest.approx((2.0 + 2.0) / 2, rel=1e-6)
    full = torch.ones_like(mask)  # no empty row: the two agree
    assert float(aggregate(loss, full, "seq_mean_token_mean")) == pytest.approx(
        float(core_algos.agg_loss(loss, full.float(), "seq-mean-token-mean")), rel=1e-6)
