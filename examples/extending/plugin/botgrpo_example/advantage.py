"""Advantage estimator `mean_baseline`: each completion's score minus its group's mean score, on
every one of its tokens (REINFORCE with a group-mean baseline, no std scaling, no token rewards).

An estimator takes (token_rewards (B, T), scores (B,), mask (B, T), group_ids (B,)) and keyword
options (here `scale`, set with algo.advantage_options, each declared with its rule so a bad value is
one line when the config loads), and returns the advantages (B, T)."""

from __future__ import annotations

from typing import Annotated

import torch
from torch import Tensor

from botgrpo_cli.algos.options import Range


def mean_baseline(token_rewards: Tensor, scores: Tensor, mask: Tensor, group_ids: Tensor,
                  scale: Annotated[float, Range(ge=0)] = 1.0) -> Tensor:
    _, group = torch.unique(group_ids, return_inverse=True)  # (B,) dense group index
    sums = torch.zeros(int(group.max()) + 1, dtype=scores.dtype).index_add_(0, group, scores)
    counts = torch.zeros_like(sums).index_add_(0, group, torch.ones_like(scores))
    advantage = scale * (scores - sums[group] / counts[group])  # (B,)
    return advantage[:, None] * mask.to(token_rewards.dtype)  # (B, T): zero past each completion
