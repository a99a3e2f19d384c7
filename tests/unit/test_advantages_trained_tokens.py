"""A multi-turn row's trained tokens are not a prefix (tool tokens lie between its turns): every
estimator must give exactly what it gives the same trained tokens packed together, and 0 on the holes.
For BoT-GRPO this means the bag's length weight 1/L_i counts trained tokens only."""

from __future__ import annotations

import pytest
import torch

from botgrpo_cli.algos import compute_advantages


def _batch():
    g = torch.Generator().manual_seed(3)
    b, t = 6, 12
    lengths = torch.tensor([12, 9, 11, 5, 12, 7])
    mask = torch.arange(t)[None, :] < lengths[:, None]
    holes = torch.zeros(b, t, dtype=torch.bool)
    holes[0, 3:6] = holes[1, 2:4] = holes[2, 5:9] = holes[4, 1:2] = holes[5, 4:6] = True  # tool answers
    trained = mask & ~holes
    scores = torch.tensor([1.0, -1.0, 0.5, 0.0, -0.5, 1.0])
    rewards = scores[:, None] + 0.5 * torch.randn(b, t, generator=g)  # span rewards vary per token
    rewards[holes] = 7.0  # whatever lies under a hole must not count
    return rewards, scores, trained, torch.tensor([0, 0, 0, 1, 1, 1])


def _packed(x: torch.Tensor, keep: torch.Tensor, fill: float = 0.0) -> torch.Tensor:
    out = torch.full_like(x, fill)
    for i in range(x.shape[0]):
        row = x[i][keep[i]]
        out[i, : len(row)] = row
    return out


@pytest.mark.parametrize("name", ["grpo", "dr_grpo", "rloo", "bot_grpo"])
def test_holes_in_the_trained_mask_equal_the_packed_rows(name):
    rewards, scores, trained, groups = _batch()
    adv = compute_advantages(name, token_rewards=rewards, scores=scores, mask=trained, group_ids=groups)
    n = trained.sum(1)
    packed_mask = torch.arange(trained.shape[1])[None, :] < n[:, None]
    packed = compute_advantages(name, token_rewards=_packed(rewards, trained), scores=scores, mask=packed_mask,
                                group_ids=groups)
    assert bool((adv[~trained] == 0).all())
    torch.testing.assert_close(_packed(adv, trained), packed)
    if name == "bot_grpo":  # token rewards vary: the bag's advantages vary within a row
        assert float(adv[0][trained[0]].std()) > 0
