"""PURE advantage (Cheng et al. 2025, "Stop Summation: Min-Form Credit Assignment...")."""

from __future__ import annotations

from typing import Annotated

import torch
from torch import Tensor

from botgrpo_cli.algos.advantages import ADVANTAGES, ProcessRewards, rloo
from botgrpo_cli.algos.options import FromTrainer, OneOf, Range
from botgrpo_cli.algos.masked import reverse_cummin, reverse_cumsum

CREDITS = ("soft_min", "strict_min", "sum")


def step_rewards(rho: Tensor, valid: Tensor, step_ends: Tensor | None) -> tuple[Tensor, Tensor]:
    """Min of rho over each step, placed on the step's last token.

    Steps are maximal runs of valid tokens closed by a `step_ends` token; the last valid token of
    a completion always closes a step. rho, valid, step_ends: (B, T) -> (p (B, T), ends (B, T) bool).
    """
    b, t = valid.shape
    ends = torch.zeros_like(valid) if step_ends is None else step_ends.bool() & valid
    last = t - 1 - valid.flip(1).to(torch.uint8).argmax(1)  # (B,) last valid position
    rows = torch.arange(b, device=valid.device)
    ends[rows, last] |= valid[rows, last]  # rows with no valid token keep no end
    step_id = ends.cumsum(1).sub_(ends.to(torch.int64)).add_(rows[:, None] * t)  # (B, T) flat step index
    step_min = torch.full((b * t,), torch.inf, dtype=rho.dtype, device=rho.device)
    src = torch.where(valid, rho, torch.inf)  # padding never lowers a step's min
    step_min.scatter_reduce_(0, step_id.view(-1), src.view(-1), reduce="amin")
    p = step_min[step_id].masked_fill_(~ends, 0.0)  # (B, T)
    return p, ends


@ADVANTAGES.register("pure")
def pure(token_rewards: Tensor, scores: Tensor, mask: Tensor, group_ids: Tensor, *,
         step_ends: Annotated[Tensor | None, FromTrainer()] = None,
         credit: Annotated[str, OneOf(CREDITS)] = "soft_min", temperature: Annotated[float, Range(gt=0)] = 0.1,
         process_rewards: ProcessRewards = None) -> Tensor:
    """PURE: A[i,t] = m[i,t] (G[i,t] + s_i - mean_{j != i} s_j), G the process return.

    Step reward p_j = min of rho over step j. credit=soft_min: p'_j = softmax_j(-p_j/T) p_j and
    G[t] = sum of p'_j over steps ending at or after t; sum: p'_j = p_j; strict_min:
    G[t] = min of p_j over those steps. rho = process_rewards (B, T), by default
    token_rewards - scores[:, None] (the token part of r with lambda_seq = 1, docs/algorithms.md §1).
    step_ends (B, T) bool marks each step's last token (None: one step per completion).
    """
    r = token_rewards.to(torch.float32)
    rho = process_rewards.to(torch.float32) if process_rewards is not None else r - scores[:, None].to(r.dtype)
    valid = mask.bool()
    p, ends = step_rewards(rho, valid, step_ends)  # (B, T)
    if credit == "strict_min":
        ret = reverse_cummin(torch.where(ends, p, torch.inf), 1)
    else:
        if credit == "soft_min":
            logits = p.mul(-1.0 / temperature).masked_fill_(~ends, -torch.inf)
            p = torch.softmax(logits, 1).nan_to_num_(0.0).mul_(p)  # rows with no step -> 0
        ret = reverse_cumsum(p, 1)
    outcome = rloo(token_rewards, scores, mask, group_ids)  # (B, T), 0 on padding
    return ret.masked_fill_(~valid, 0.0).add_(outcome)
