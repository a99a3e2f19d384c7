"""Advantage estimators (docs/algorithms.md §2): pure functions of token rewards, scores, mask and groups.

Every estimator has the signature `fn(token_rewards, scores, mask, group_ids, **options)`:
token_rewards float (B, T), scores float (B,), mask bool or 0/1 (B, T), group_ids int (B,);
it returns A float (B, T), exactly zero on padding. Group statistics use index_add_ over dense
group ids; nothing loops over rows or groups in Python (bot_grpo's (B, T) passes run over blocks
of rows sized for the cache, not per row or group).
"""

from __future__ import annotations

from typing import Annotated

import torch
from torch import Tensor

from botgrpo_cli.algos.dapo import zero_variance_groups
from botgrpo_cli.algos.masked import (
    block_rows,
    compact_groups,
    degenerate_groups,
    float_mask_blocks,
    group_count,
    group_moments,
    group_sum,
    reverse_cummin,
    reverse_cumsum,
)
from botgrpo_cli.algos.options import FromTrainer, OneOf, Range, check_choice
from botgrpo_cli.algos.registry import Registry

ADVANTAGES: Registry = Registry("advantage estimator", "botgrpo.advantages")  # plugins: docs/extending.md

SCALES = ("group", "batch", "none")
BASELINES = ("bag", "outcome")
RETURNS = ("immediate", "sum_to_go", "min_to_go")
# Option types shared by the estimators (checked when a config loads: algos/options.py).
Scale = Annotated[str, OneOf(SCALES)]
Eps = Annotated[float, Range(ge=0)]
Return = Annotated[str, OneOf(RETURNS)]
ProcessRewards = Annotated[Tensor | None, FromTrainer()]


def apply_reward_return(r: Tensor, mask: Tensor, kind: str = "immediate") -> Tensor:
    """Token reward transform. immediate: r; sum_to_go: sum_{u>=t} r; min_to_go: min_{u>=t} r.

    r, mask: (B, T); reductions run over valid tokens only; padding comes back as 0.
    """
    check_choice("reward_return", kind, RETURNS)
    if kind == "immediate":
        return r
    valid = mask.bool()
    if kind == "sum_to_go":
        return reverse_cumsum(torch.where(valid, r, 0.0), 1) * valid
    to_go = reverse_cummin(torch.where(valid, r, torch.inf), 1)  # (B, T)
    return torch.where(valid, to_go, 0.0)


def _row_scale(scale: str, eps: float, group_std: Tensor, batch_std: Tensor, dense: Tensor) -> Tensor:
    """Per-row divisor 1 / (std + eps) for scale group | batch, 1 for none. -> (B,)."""
    if scale == "group":
        return 1.0 / (group_std[dense] + eps)
    if scale == "batch":
        return (1.0 / (batch_std + eps)).expand(dense.shape[0])
    return torch.ones(dense.shape[0], dtype=group_std.dtype, device=group_std.device)


@ADVANTAGES.register("grpo")
def grpo(token_rewards: Tensor, scores: Tensor, mask: Tensor, group_ids: Tensor, *,
         scale: Scale = "group", eps: Eps = 1e-4) -> Tensor:
    """GRPO (Shao et al. 2024, DeepSeekMath): A[i,t] = m[i,t] (s_i - mu_k) / (sd_k + eps).

    sd_k is the Bessel-corrected std of the group's scores (as torch.std); scale=batch uses one
    std over all scores, scale=none (Dr. GRPO) none. Single-member or constant groups give 0.
    token_rewards is unused (outcome estimator). Shapes: (B, T), (B,), (B, T), (B,) -> (B, T).
    """
    s = scores.to(torch.float32)
    dense, k = compact_groups(group_ids)
    n, mu, std = group_moments(s, dense, k)  # (K,) each
    dev = s - mu[dense]  # (B,)
    batch_std = s.std() if s.numel() > 1 else s.new_zeros(())
    adv = dev * _row_scale(scale, eps, std, batch_std, dense)  # (B,)
    adv = torch.where(degenerate_groups(n, mu, std)[dense], 0.0, adv)
    return mask.to(adv.dtype).mul_(adv[:, None])


@ADVANTAGES.register("dr_grpo")
def dr_grpo(token_rewards: Tensor, scores: Tensor, mask: Tensor, group_ids: Tensor, *,
            eps: Eps = 1e-4) -> Tensor:
    """Dr. GRPO (Liu et al. 2025): grpo without the std division, A = m (s_i - mu_k)."""
    return grpo(token_rewards, scores, mask, group_ids, scale="none", eps=eps)


@ADVANTAGES.register("rloo")
def rloo(token_rewards: Tensor, scores: Tensor, mask: Tensor, group_ids: Tensor) -> Tensor:
    """RLOO (Ahmadian et al. 2024): A[i,t] = m[i,t] (s_i - mean_{j in k, j != i} s_j).

    Single-member and constant groups give exactly 0. Shapes as grpo.
    """
    s = scores.to(torch.float32)
    dense, k = compact_groups(group_ids)
    n = group_count(dense, k)[dense]  # (B,)
    others = (group_sum(s, dense, k)[dense] - s) / (n - 1).clamp(min=1)  # (B,)
    adv = torch.where(zero_variance_groups(s, group_ids), 0.0, s - others)
    return mask.to(adv.dtype).mul_(adv[:, None])


@ADVANTAGES.register("bot_grpo")
def bot_grpo(token_rewards: Tensor, scores: Tensor, mask: Tensor, group_ids: Tensor, *,
             scale: Scale = "group", eps: Eps = 1e-4, std_correction: Annotated[int, OneOf((1, 0))] = 1,
             reward_return: Return = "immediate", baseline: Annotated[str, OneOf(BASELINES)] = "bag",
             process_rewards: ProcessRewards = None) -> Tensor:
    """BoT-GRPO. baseline=bag (the paper's, default): the bag-of-tokens estimator below.
    baseline=outcome: only the score is centred, A = grpo(s) + m * ret(rho) (see bot_grpo_outcome)."""
    if baseline == "outcome":
        return bot_grpo_outcome(token_rewards, scores, mask, group_ids, scale=scale, eps=eps,
                                reward_return=reward_return, process_rewards=process_rewards)
    return _bag(token_rewards, scores, mask, group_ids, scale, eps, std_correction, reward_return)


def bot_grpo_outcome(token_rewards: Tensor, scores: Tensor, mask: Tensor, group_ids: Tensor, *,
                     scale: Scale = "group", eps: Eps = 1e-4, reward_return: str = "immediate",
                     process_rewards: Tensor | None = None) -> Tensor:
    """A[i,t] = m[i,t] ((s_i - mu_k) / (sd_k + eps) + ret(rho)[i,t]): outcome and token parts apart.

    The bag's baseline mixes the span penalties into mu_k, so when most of a group fails mu_k < 0
    and every unpenalised token of a failing completion gets (0 - mu_k)/sd_k > 0 (research/convergence.md,
    "The run-on bias"). Here the outcome part is grpo's (centred by the group's mean score) and the
    token part rho (default token_rewards - scores, i.e. lambda_seq = 1; the trainer passes
    lambda_tok * rho) is not centred: a clean token of a failing completion gets exactly its outcome
    advantage (<= 0), and a span stays a penalty even in an all-failing (constant-score) group.
    Shapes as bot_grpo.
    """
    r = token_rewards.to(torch.float32)
    rho = process_rewards.to(torch.float32) if process_rewards is not None else r - scores[:, None].to(r.dtype)
    dense = apply_reward_return(rho, mask, reward_return).masked_fill(~mask.bool(), 0.0)
    return grpo(token_rewards, scores, mask, group_ids, scale=scale, eps=eps).add_(dense)


def _bag(token_rewards: Tensor, scores: Tensor, mask: Tensor, group_ids: Tensor, scale: str, eps: float,
         std_correction: int, reward_return: str) -> Tensor:
    """BoT-GRPO: A[i,t] = m[i,t] (r[i,t] - mu_k) / (sd_k + eps) over a bag of tokens per group.

    Tokens weigh w[i,t] = m[i,t] / L_i; W_k = sum w; mu_k = sum w r / W_k;
    var_k = sum w (r - mu_k)^2 / (W_k - c), c = std_correction (1: Bessel for frequency weights,
    which makes constant-per-completion rewards reproduce grpo exactly). scale group|batch|none.
    Per-row centred moments are merged into groups (Chan et al.) for float32 stability. The (B, T)
    work is two passes over blocks of rows that stay in cache (masked.block_rows) into one buffer,
    the output; the group statistics are vectorised over the batch. Padding of token_rewards may
    hold any finite value. Options arrive checked by bot_grpo's signature. (B, T), (B,), (B, T), (B,) -> (B, T).
    """
    r = apply_reward_return(token_rewards.to(torch.float32), mask, reward_return)
    centred, nonempty, row_mean, row_m2 = _row_moments(r, mask)

    dense, k = compact_groups(group_ids)
    weight = group_sum(nonempty.to(r.dtype), dense, k)  # (K,) = W_k
    mu = group_sum(row_mean, dense, k) / weight.clamp(min=1)  # (K,)
    shift = row_mean - mu[dense]  # (B,)
    m2 = group_sum(row_m2 + shift * shift * nonempty, dense, k)  # (K,)
    std = (m2 / (weight - std_correction).clamp(min=1e-12)).sqrt()  # only read where W_k >= 2

    total = weight.sum()
    batch_shift = (row_mean - row_mean.sum() / total.clamp(min=1)) * nonempty
    batch_m2 = (row_m2 + batch_shift * batch_shift).sum()
    batch_std = (batch_m2 / (total - std_correction).clamp(min=1e-12)).sqrt()

    row_scale = _row_scale(scale, eps, std, batch_std, dense)
    row_scale = torch.where(degenerate_groups(weight, mu, std)[dense] | ~nonempty, 0.0, row_scale)
    # (r - mu_k) m = centred + m (row_mean - mu_k): the centred buffer becomes the output.
    rows = block_rows(r)
    for m, out, s, scaled in zip(float_mask_blocks(mask, rows, r.dtype), centred.split(rows),
                                 shift.split(rows), row_scale.split(rows)):
        out.addcmul_(m, s[:, None]).mul_(scaled[:, None])
    return centred


def _row_moments(r: Tensor, mask: Tensor) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """Per row of r (B, T) over its valid tokens: r - row mean (0 on padding) (B, T), and (B,) each:
    nonempty (L_i > 0), the mean, and M2 / L_i (the within-row weighted second moment)."""
    b, t = r.shape
    centred = torch.empty_like(r)
    length, inv_len, row_mean, row_norm = (r.new_empty(b) for _ in range(4))
    rows = block_rows(r)
    blocks = zip(float_mask_blocks(mask, rows, r.dtype), *(x.split(rows) for x in (
        r, centred, length, inv_len, row_mean, row_norm)))
    for m, rewards, out, n, inv, mean, norm in blocks:  # one block of rows, in cache
        torch.mul(rewards, m, out=out)
        torch.sum(m, 1, out=n)
        torch.clamp(n, min=1, out=inv).reciprocal_()
        torch.mul(out.sum(1), inv, out=mean)
        out.addcmul_(m, mean[:, None], value=-1)  # r - row mean on valid tokens, 0 on padding
        torch.linalg.vector_norm(out, dim=1, out=norm)
    nonempty = length > 0
    return centred, nonempty, row_mean, row_norm.square() * torch.where(nonempty, inv_len, 0.0)


def compute_advantages(name: str, *, token_rewards: Tensor, scores: Tensor, mask: Tensor,
                       group_ids: Tensor, **options) -> Tensor:
    """Run the estimator `name` (grpo | dr_grpo | bot_grpo | rloo | pure) -> A (B, T) float32.

    token_rewards (B, T), scores (B,), mask (B, T) bool or 0/1, group_ids (B,) int; options are
    the estimator's keyword options (docs/algorithms.md §2), typed and range-checked. Unknown name -> KeyError
    listing the known; a bad option value -> OptionError (a ValueError).
    """
    estimator = ADVANTAGES[name]
    if token_rewards.dim() != 2 or mask.shape != token_rewards.shape:
        raise ValueError(f"token_rewards and mask must both be (B, T); got {tuple(token_rewards.shape)} "
                         f"and {tuple(mask.shape)}")
    b = token_rewards.shape[0]
    if scores.shape != (b,) or group_ids.shape != (b,):
        raise ValueError(f"scores and group_ids must be ({b},); got {tuple(scores.shape)} and "
                         f"{tuple(group_ids.shape)}")
    options = ADVANTAGES.check_options(name, options, positional=4, user=False)
    with torch.no_grad():
        return estimator(token_rewards, scores, mask, group_ids, **options)
