"""The update on one rollout batch: M mini-batches x E epochs of optimizer steps (one by default),
each a micro-batched policy loss with gradient accumulation, clipping and AdamW."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from botgrpo_cli import learning_rate
from botgrpo_cli.algos import masked_mean, policy_loss
from botgrpo_cli.algos.shaping import high_entropy_mask, off_policy_mask
from botgrpo_cli.config import Config
from botgrpo_cli.trainer.defaults import MAX_AUTO_MICRO_BATCH
from botgrpo_cli.trainer.distributed import Dist, loss_weights
from botgrpo_cli.trainer.logprobs import forward_logps
from botgrpo_cli.trainer.minibatches import plan, units
from botgrpo_cli.trainer.nonfinite import step_if_finite
from botgrpo_cli.trainer.packing import used_width


@dataclass
class UpdateInputs:
    prompt_ids: list[list[int]]
    completion_ids: Tensor  # (B, T)
    mask: Tensor  # (B, T) bool: the trained tokens (the model's own); rows whose reward failed are all False
    advantages: Tensor  # (B, T)
    logp_old: Tensor | None  # (B, T); None: the policy sampled these rows itself, so logp_old = logp.detach()
    logp_ref: Tensor | None  # (B, T) when beta > 0
    group_ids: Tensor | None = None  # (B,) groups contiguous; mini-batches keep them whole (None: any rows)
    is_weights: Tensor | None = None  # (B, T) engine/trainer mismatch weights (algos.losses.mismatch_weights)

    def rows(self, idx: Tensor) -> UpdateInputs:
        """The inputs of the rows `idx` (a mini-batch)."""
        def pick(t: Tensor | None) -> Tensor | None:
            return None if t is None else t[idx]

        return UpdateInputs([self.prompt_ids[i] for i in idx.tolist()], self.completion_ids[idx], self.mask[idx],
                            self.advantages[idx], pick(self.logp_old), pick(self.logp_ref), pick(self.group_ids),
                            pick(self.is_weights))


def make_optimizer(model: Any, cfg: Config) -> tuple[torch.optim.Optimizer, Any]:
    """AdamW over trainable parameters and the optim.lr_scheduler schedule over run.steps."""
    if cfg.optim.lr is None:
        raise ValueError("optim.lr is unset: set it, or let open_session choose it from the model "
                         "(botgrpo_cli.trainer.defaults.resolve)")
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=cfg.optim.lr, betas=tuple(cfg.optim.betas),
                            weight_decay=cfg.optim.weight_decay)
    o = cfg.optim
    return opt, learning_rate.scheduler(opt, o.lr_scheduler, o.warmup_steps, cfg.run.steps, o.lr_scheduler_options)


def updates_per_batch(cfg: Config) -> int:
    """Optimizer steps one rollout batch asks for (fewer when it has fewer groups than mini-batches)."""
    return cfg.algo.mini_batches * cfg.algo.epochs


def update(model: Any, opt: torch.optim.Optimizer, sched: Any, inp: UpdateInputs, cfg: Config,
           pad_id: int, max_len: int, dist: Dist = Dist()) -> dict[str, float]:
    """Train on one rollout batch: algo.mini_batches x algo.epochs optimizer steps over consecutive
    mini-batches (whole groups unless algo.mini_batch_split=rows), then one scheduler step.
    Returns loss metrics averaged over the steps, plus each step's clip fraction, ratio range and KL
    when there are several. Several steps need inp.logp_old: the ratio is against the sampling policy."""
    a = cfg.algo
    pieces = units(inp.group_ids, inp.mask.shape[0], a.mini_batch_split)
    # every process must take the same number of steps (each one all-reduces the gradients)
    count = int(dist.min([min(a.mini_batches, len(pieces))])[0])
    steps = plan(pieces, count, a.epochs)
    if len(steps) > 1 and inp.logp_old is None:
        raise ValueError("several updates per rollout batch need logp_old, computed before the first update")
    # dapo (TRL's): every optimizer step divides by the rollout batch's valid tokens over the steps per pass
    per_step = max(1.0, dist.sum([float(inp.mask.sum())])[0] / count) if a.loss_agg == "dapo" else None
    if len(steps) == 1:
        metrics = _optimizer_step(model, opt, inp, cfg, pad_id, max_len, dist, per_step)
    else:
        metrics = _over_steps([_optimizer_step(model, opt, inp.rows(rows), cfg, pad_id, max_len, dist, per_step)
                               for rows in steps])
    metrics["update/steps"] = float(len(steps))
    metrics["lr"] = float(sched.get_last_lr()[0])
    sched.step()  # once per rollout batch: optim.warmup_steps counts training steps at any M x E
    return metrics


def _optimizer_step(model: Any, opt: torch.optim.Optimizer, inp: UpdateInputs, cfg: Config, pad_id: int,
                    max_len: int, dist: Dist, tokens_per_step: float | None = None) -> dict[str, float]:
    """Accumulate gradients over micro-batches, clip, step. Returns loss metrics and entropy.
    Under several processes gradients are averaged once, after the last micro-batch."""
    model.train()
    opt.zero_grad(set_to_none=True)
    totals: dict[str, float] = {}
    a, mb = cfg.algo, cfg.optim.micro_batch_size or MAX_AUTO_MICRO_BATCH  # unset outside open_session: the cap
    micro = [slice(lo, lo + mb) for lo in range(0, inp.mask.shape[0], mb)]
    weights = loss_weights(a.loss_agg, [inp.mask[rows] for rows in micro], dist, tokens_per_step)
    for k, (rows, weight) in enumerate(zip(micro, weights)):
        width = used_width(inp.mask[rows])
        cols = (rows, slice(0, width))
        with dist.no_sync(model, last=k == len(micro) - 1):
            logp, entropy = forward_logps(model, inp.prompt_ids[rows], inp.completion_ids[cols], pad_id,
                                          cfg.rollout.temperature, with_entropy=True, entropy_grad=a.entropy_coef > 0)
            dev = logp.device
            mask = inp.mask[cols].to(dev)
            logp_old = logp.detach() if inp.logp_old is None else inp.logp_old[cols].to(dev)
            advantages = inp.advantages[cols].to(dev)
            keep, kept = kept_tokens(a, logp, logp_old, advantages, entropy, mask)
            loss, metrics = policy_loss(
                a.loss, logp=logp, logp_old=logp_old, advantages=advantages,
                mask=mask, loss_agg=a.loss_agg, logp_ref=None if inp.logp_ref is None else inp.logp_ref[cols].to(dev),
                beta=a.beta, max_completion_length=max_len,
                entropy=entropy, entropy_coef=a.entropy_coef,
                is_weights=None if inp.is_weights is None else inp.is_weights[cols].to(dev), keep=keep,
                kl_bias_correction=a.kl_bias_correction, **a.loss_options)
            (loss * weight).backward()
        metrics["entropy"] = float(masked_mean(entropy.detach(), mask))
        metrics.update(kept)
        for name, v in metrics.items():
            if name in EXTREMES:
                totals[name] = EXTREMES[name](totals.get(name, v), v)
            else:
                totals[name] = totals.get(name, 0.0) + weight * v
    params = [p for p in model.parameters() if p.requires_grad]
    clip = cfg.optim.grad_clip if cfg.optim.grad_clip > 0 else float("inf")
    totals["grad_norm"] = dist.clip_grad_norm(params, clip)
    stepped = step_if_finite(opt, totals.get("loss", 0.0), totals["grad_norm"], dist)  # a NaN never reaches a weight
    totals["update/nonfinite_skipped"] = float(not stepped)
    return totals


def kept_tokens(a: Any, logp: Tensor, logp_old: Tensor, advantages: Tensor, entropy: Tensor,
                mask: Tensor) -> tuple[Tensor | None, dict[str, float]]:
    """The tokens the policy loss keeps (algo.top_entropy_quantile, algo.off_policy_mask: algos.shaping)
    as a (B, T) bool, None when both are off, and the kept shares as metrics. The behaviour policy is
    logp_old (the sampler's, or the current one detached when the policy sampled itself)."""
    keep, metrics = None, {}
    if a.top_entropy_quantile < 1.0:
        keep = high_entropy_mask(entropy, mask, a.top_entropy_quantile)
        metrics["kept/high_entropy"] = float(masked_mean(keep.float(), mask))
    if a.off_policy_mask is not None:
        on_policy = off_policy_mask(advantages, logp, logp_old, mask, a.off_policy_mask)
        metrics["kept/off_policy"] = float(masked_mean(on_policy.float(), mask))
        keep = on_policy if keep is None else keep & on_policy
    return keep, metrics


def _nan_min(a: float, b: float) -> float:
    return b if math.isnan(a) else a if math.isnan(b) else min(a, b)


def _nan_max(a: float, b: float) -> float:
    return b if math.isnan(a) else a if math.isnan(b) else max(a, b)


EXTREMES = {"ratio_min": _nan_min, "ratio_max": _nan_max}  # combined by min / max, never averaged
PER_STEP = ("clip_frac", "ratio_mean", "ratio_min", "ratio_max", "kl")  # logged for each mini-batch step


def _over_steps(steps: list[dict[str, float]]) -> dict[str, float]:
    """Several optimizer steps' metrics -> their means (extremes for the ratio range), plus
    `NAME/mbK` (K = 1, 2, ... in training order) for the off-policy statistics of each step."""
    out: dict[str, float] = {}
    for name in steps[0]:
        values = [m[name] for m in steps]
        if name in EXTREMES:
            out[name] = functools.reduce(EXTREMES[name], values)
        else:
            out[name] = sum(values) / len(values)
        if name in PER_STEP:
            out.update({f"{name}/mb{k}": v for k, v in enumerate(values, 1)})
    return out
