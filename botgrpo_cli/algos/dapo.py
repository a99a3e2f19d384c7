"""DAPO helpers (Yu et al. 2025): overlong reward shaping and zero-variance group detection."""

from __future__ import annotations

import torch
from torch import Tensor

from botgrpo_cli.algos.masked import compact_groups, degenerate_groups, group_moments


def overlong_penalty(lengths: Tensor, max_len: int, cache: int) -> Tensor:
    """Soft overlong penalty added to s_i. lengths (B,) -> (B,) float32.

    0 if |y| <= max_len - cache; ((max_len - cache) - |y|) / cache up to max_len; -1 beyond.
    """
    if max_len <= 0 or not 0 <= cache <= max_len:
        raise ValueError(f"need max_len > 0 and 0 <= cache <= max_len; got max_len={max_len}, cache={cache}")
    length = lengths.to(torch.float32)
    start = max_len - cache
    ramp = (start - length) / cache if cache > 0 else torch.zeros_like(length)
    penalty = torch.where(length <= start, 0.0, ramp)
    return torch.where(length > max_len, -1.0, penalty)


def zero_variance_groups(scores: Tensor, group_ids: Tensor) -> Tensor:
    """True for every member of a group of one or whose scores are equal up to float32 rounding
    (masked.degenerate_groups: the rule the estimators zero). (B,), (B,) -> (B,) bool."""
    dense, k = compact_groups(group_ids)
    return degenerate_groups(*group_moments(scores.to(torch.float32), dense, k))[dense]
