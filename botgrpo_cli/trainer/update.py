"""One optimizer step: micro-batched policy loss with gradient accumulation, clipping, AdamW."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from botgrpo_cli.algos import masked_mean, policy_loss
from botgrpo_cli.config import Config
from botgrpo_cli.trainer.logprobs import forward_logps


@dataclass
class UpdateInputs:
    prompt_ids: list[list[int]]
    completion_ids: Tensor  # (B, T)
    mask: Tensor  # (B, T) bool; rows whose reward failed are all False
    advantages: Tensor  # (B, T)
    logp_old: Tensor  # (B, T)
    logp_ref: Tensor | None  # (B, T) when beta > 0


def make_optimizer(model: Any, cfg: Config) -> tuple[torch.optim.Optimizer, Any]:
    """AdamW over trainable parameters and a linear warm-up then constant schedule."""
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=cfg.optim.lr, betas=tuple(cfg.optim.betas),
                            weight_decay=cfg.optim.weight_decay)
    warmup = cfg.optim.warmup_steps
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / warmup) if warmup else 1.0)
    return opt, sched


def micro_weight(loss_agg: str, mb_mask: Tensor, mask: Tensor) -> float:
    """Share of the full-batch loss a micro-batch's own aggregate stands for, so that the
    accumulated gradient equals the full-batch one."""
    if loss_agg == "token_mean":
        return float(mb_mask.sum()) / max(1.0, float(mask.sum()))
    return mb_mask.shape[0] / mask.shape[0]


def update(model: Any, opt: torch.optim.Optimizer, sched: Any, inp: UpdateInputs, cfg: Config,
           pad_id: int, max_len: int) -> dict[str, float]:
    """Accumulate gradients over micro-batches, clip, step. Returns loss metrics and entropy."""
    model.train()
    opt.zero_grad(set_to_none=True)
    totals: dict[str, float] = {}
    a, mb = cfg.algo, cfg.optim.micro_batch_size
    for lo in range(0, inp.mask.shape[0], mb):
        rows = slice(lo, lo + mb)
        width = max(1, int(inp.mask[rows].sum(1).max()))
        cols = (rows, slice(0, width))
        mask = inp.mask[cols]
        logp, entropy = forward_logps(model, inp.prompt_ids[rows], inp.completion_ids[cols], pad_id,
                                      cfg.rollout.temperature, with_entropy=True)
        loss, metrics = policy_loss(
            a.loss, logp=logp, logp_old=inp.logp_old[cols], advantages=inp.advantages[cols], mask=mask,
            loss_agg=a.loss_agg, logp_ref=None if inp.logp_ref is None else inp.logp_ref[cols], beta=a.beta,
            eps_low=a.eps_low, eps_high=a.eps_high, max_completion_length=max_len)
        weight = micro_weight(a.loss_agg, mask, inp.mask)
        (loss * weight).backward()
        metrics["entropy"] = float(masked_mean(entropy, mask))
        for k, v in metrics.items():
            totals[k] = totals.get(k, 0.0) + weight * v
    params = [p for p in model.parameters() if p.requires_grad]
    clip = cfg.optim.grad_clip if cfg.optim.grad_clip > 0 else float("inf")
    totals["grad_norm"] = float(torch.nn.utils.clip_grad_norm_(params, clip))
    totals["lr"] = float(sched.get_last_lr()[0])
    opt.step()
    sched.step()
    opt.zero_grad(set_to_none=True)
    return totals
