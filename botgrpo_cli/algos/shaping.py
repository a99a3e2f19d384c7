"""Batch shaping (docs/algorithms.md §3): which tokens the loss keeps, and GDPO's reward combination
(truncated completions: RolloutBatch.finished).
Pure tensor functions; the trainer decides when they apply (AlgoConfig)."""

from __future__ import annotations

import torch
from torch import Tensor

from botgrpo_cli.algos.masked import as_float_mask, compact_groups, group_sum

GDPO_EPS = 1e-4  # TRL's (and grpo's) eps in (x - mean) / (std + eps)


def high_entropy_mask(entropy: Tensor, mask: Tensor, quantile: float) -> Tensor:
    """Keep the top `quantile` share of valid tokens by entropy (Wang et al. 2025, "Beyond the 80/20
    rule"; TRL's top_entropy_quantile): True where entropy >= the (1 - quantile) quantile of the valid
    tokens' entropies (torch.quantile, linear interpolation), never on padding. quantile = 0 keeps the
    highest-entropy token(s) only. (B, T), (B, T) -> (B, T) bool."""
    valid = mask.bool()
    values = entropy.detach()[valid].float()
    if values.numel() == 0:
        return torch.zeros_like(valid)
    threshold = torch.quantile(values, 1.0 - quantile)
    return (entropy.detach() >= threshold) & valid


def off_policy_mask(advantages: Tensor, logp: Tensor, logp_behaviour: Tensor, mask: Tensor,
                    threshold: float) -> Tensor:
    """DeepSeek-V3.2's off-policy sequence mask (TRL's off_policy_mask_threshold): keep a token unless
    its advantage is negative and its completion's mean KL(behaviour || policy), estimated per token by
    logp_behaviour - logp over valid tokens, exceeds `threshold`. A token log-prob the behaviour policy
    lacks (NaN) counts as no gap, as TRL's. Advantages per token: a completion's positive tokens stay
    when its negative ones go (TRL's rule applied to (B, T) advantages). All (B, T) -> (B, T) bool."""
    m = as_float_mask(mask, logp.dtype)
    gap = torch.nan_to_num(logp_behaviour.detach() - logp.detach(), nan=0.0)
    mean_kl = (gap * m).sum(1, keepdim=True) / m.sum(1, keepdim=True).clamp(min=1.0)  # (B, 1)
    return (advantages >= 0) | (mean_kl <= threshold)


def normalize_then_sum(per_function: Tensor, weights: Tensor, group_ids: Tensor) -> Tensor:
    """GDPO (Liu et al. 2026; TRL's multi_objective_aggregation="normalize_then_sum"): each reward
    function's scores normalised within the group, (s_f - mean_g s_f) / (std_g s_f + eps) with Bessel's
    std, then summed with `weights`. NaN (a function that did not score a row) is left out of its
    group's statistics and adds nothing to the sum; a row no function scored comes back NaN.
    per_function (B, F), weights (F,), group_ids (B,) -> (B,). TRL then normalises the sum over the
    batch, which the advantage estimator does here (scale=batch)."""
    x = per_function.to(torch.float32)
    scored = ~torch.isnan(x)
    dense, k = compact_groups(group_ids)
    filled = torch.where(scored, x, 0.0)
    n = group_sum(scored.to(x.dtype), dense, k)  # (K, F) scored members per group and function
    mean = group_sum(filled, dense, k) / n.clamp(min=1)
    dev = torch.where(scored, x - mean[dense], 0.0)
    std = (group_sum(dev * dev, dense, k) / (n - 1).clamp(min=1)).sqrt()
    std = torch.where(n > 1, std, torch.nan)  # one scored member: no std (TRL: NaN, so no contribution)
    normalised = torch.nan_to_num((x - mean[dense]) / (std[dense] + GDPO_EPS), nan=0.0)
    total = (normalised * weights.to(x.dtype)).sum(1)
    return torch.where(scored.any(1), total, torch.nan)


__all__ = ["GDPO_EPS", "high_entropy_mask", "normalize_then_sum", "off_policy_mask"]
