"""One optimizer step: micro-batched policy loss with gradient accumulation, clipping, AdamW."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from botgrpo_cli.algos import masked_mean, policy_loss
from botgrpo_cli.config import Config
from botgrpo_cli.trainer.distributed import Dist, loss_weights
from botgrpo_cli.trainer.logprobs import forward_logps


@dataclass
class UpdateInputs:
    prompt_ids: list[list[int]]
    completion_ids: Tensor  # (B, T)
    mask: Tensor  # (B, T) bool; rows whose reward failed are all False
    advantages: Tensor  # (B, T)
    logp_old: Tensor | None  # (B, T); None: the policy sampled these rows itself, so logp_old = logp.detach()
    logp_ref: Tensor | None  # (B, T) when beta > 0


def make_optimizer(model: Any, cfg: Config) -> tuple[torch.optim.Optimizer, Any]:
    """AdamW over trainable parameters and a linear warm-up then constant schedule."""
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=cfg.optim.lr, betas=tuple(cfg.optim.betas),
                            weight_decay=cfg.optim.weight_decay)
    warmup = cfg.optim.warmup_steps
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / warmup) if warmup else 1.0)
    return opt, sched


def update(model: Any, opt: torch.optim.Optimizer, sched: Any, inp: UpdateInputs, cfg: Config,
           pad_id: int, max_len: int, dist: Dist = Dist()) -> dict[str, float]:
    """Accumulate gradients over micro-batches, clip, step. Returns loss metrics and entropy.
    Under several processes gradients are averaged once, after the last micro-batch."""
    model.train()
    opt.zero_grad(set_to_none=True)
    totals: dict[str, float] = {}
    a, mb = cfg.algo, cfg.optim.micro_batch_size
    micro = [slice(lo, lo + mb) for lo in range(0, inp.mask.shape[0], mb)]
    weights = loss_weights(a.loss_agg, [inp.mask[rows] for rows in micro], dist)
    for k, (rows, weight) in enumerate(zip(micro, weights)):
        width = max(1, int(inp.mask[rows].sum(1).max()))
        cols = (rows, slice(0, width))
        with dist.no_sync(model, last=k == len(micro) - 1):
            logp, entropy = forward_logps(model, inp.prompt_ids[rows], inp.completion_ids[cols], pad_id,
                                          cfg.rollout.temperature, with_entropy=True)
            dev = logp.device
            mask = inp.mask[cols].to(dev)
            loss, metrics = policy_loss(
                a.loss, logp=logp, logp_old=logp.detach() if inp.logp_old is None else inp.logp_old[cols].to(dev),
                advantages=inp.advantages[cols].to(dev),
                mask=mask, loss_agg=a.loss_agg, logp_ref=None if inp.logp_ref is None else inp.logp_ref[cols].to(dev),
                beta=a.beta, eps_low=a.eps_low, eps_high=a.eps_high, max_completion_length=max_len)
            (loss * weight).backward()
        metrics["entropy"] = float(masked_mean(entropy, mask))
        for name, v in metrics.items():
            totals[name] = totals.get(name, 0.0) + weight * v
    params = [p for p in model.parameters() if p.requires_grad]
    clip = cfg.optim.grad_clip if cfg.optim.grad_clip > 0 else float("inf")
    totals["grad_norm"] = dist.clip_grad_norm(params, clip)
    totals["lr"] = float(sched.get_last_lr()[0])
    opt.step()
    sched.step()
    opt.zero_grad(set_to_none=True)
    return totals
