"""Policy losses (docs/algorithms.md §3): PPO-clip and GSPO surrogates and TRL's cispo, sapo and vespo, k3 KL,
entropy bonus, token aggregation, and the correction for an engine that samples with numerics other
than the trainer's (vLLM)."""

from __future__ import annotations

import math
from typing import Annotated

import torch
from torch import Tensor

from botgrpo_cli.algos.masked import as_float_mask, masked_mean
from botgrpo_cli.algos.options import FromTrainer, Range, check_choice, from_trainer
from botgrpo_cli.algos.registry import Registry

LOSSES: Registry = Registry("policy loss")
LOSS_AGGS = ("seq_mean_token_mean", "token_mean", "seq_mean_token_sum_norm", "dapo", "bnpo", "seq_mean_token_sum")
BY_TOKENS = ("token_mean", "dapo")  # the aggregations that normalise by valid tokens, not by completions
# Clip widths: the ratio is clipped to [1 - eps_low, 1 + eps_high] (checked when a config loads).
EpsLow = Annotated[float, Range(ge=0, le=1)]
EpsHigh = Annotated[float, Range(ge=0)]
# Two-sided clipping (INTELLECT-2; TRL's `delta`): the unclipped ratio is also capped at delta; 0 = off.
Delta = Annotated[float, Range(ge=0)]
Positive = Annotated[float, Range(gt=0)]
NonNegative = Annotated[float, Range(ge=0)]


def _clipped(ratio: Tensor, adv: Tensor, eps_low: float, eps_high: float,
             delta: float = 0.0) -> tuple[Tensor, Tensor]:
    """-min(min(ratio, delta) A, clip(ratio, 1-eps_low, 1+eps_high) A) and where the clip is active.
    delta = 0: no cap on the unclipped term (one-sided PPO clip). (B, T)."""
    unclipped = (ratio.clamp(max=delta) if delta > 0 else ratio) * adv
    clipped = ratio.clamp(1.0 - eps_low, 1.0 + eps_high) * adv
    return -torch.minimum(unclipped, clipped), clipped < unclipped


@LOSSES.register("clip")
def clip_loss(logp: Tensor, logp_old: Tensor, advantages: Tensor, mask: Tensor, *,
              eps_low: EpsLow = 0.2, eps_high: EpsHigh = 0.2, delta: Delta = 0.0) -> tuple[Tensor, Tensor, Tensor]:
    """PPO/GRPO/DAPO clip: l = -min(ratio A, clip(ratio, 1-eps_low, 1+eps_high) A); with delta > 0
    the first term's ratio is min(ratio, delta) (two-sided clipping).

    ratio = exp(logp - logp_old). All (B, T) -> (per-token loss, ratio, clip active), (B, T).
    """
    ratio = torch.exp(logp - logp_old)
    loss, active = _clipped(ratio, advantages, eps_low, eps_high, delta)
    return loss, ratio, active


@LOSSES.register("gspo")
def gspo_loss(logp: Tensor, logp_old: Tensor, advantages: Tensor, mask: Tensor, *,
              eps_low: EpsLow = 3e-4, eps_high: EpsHigh = 4e-4, delta: Delta = 0.0) -> tuple[Tensor, Tensor, Tensor]:
    """GSPO (Zheng et al. 2025): sequence ratio s_i = exp(mean_t (logp - logp_old)).

    Rows whose advantage is constant over valid tokens use s_i itself (sequence form); rows with
    token-varying advantages use GSPO-token, s[i,t] = sg(s_i) exp(logp - sg(logp)): same value,
    per-token gradient. Then l = -min(s A, clip(s, 1-eps_low, 1+eps_high) A), delta as clip's. (B, T) each.
    """
    valid = mask.bool()
    seq_ratio = torch.exp(masked_mean(logp - logp_old, valid, dim=1))  # (B,)
    token_form = seq_ratio.detach()[:, None] * torch.exp(logp - logp.detach())  # (B, T)
    a_max = torch.where(valid, advantages, -torch.inf).amax(1)
    a_min = torch.where(valid, advantages, torch.inf).amin(1)
    varies = (a_max > a_min)[:, None]  # (B, 1)
    ratio = torch.where(varies, token_form, seq_ratio[:, None].expand_as(logp))
    loss, active = _clipped(ratio, advantages, eps_low, eps_high, delta)
    return loss, ratio, active


@LOSSES.register("cispo")
def cispo_loss(logp: Tensor, logp_old: Tensor, advantages: Tensor, mask: Tensor, *,
               eps_high: Positive = 5.0) -> tuple[Tensor, Tensor, Tensor]:
    """CISPO (MiniMax-M1; TRL's loss_type="cispo"): l = -sg(min(ratio, eps_high)) A logp.

    The ratio is clipped and detached, never the token: every token keeps a gradient A ∇logp,
    weighted by its capped ratio. eps_high is the cap itself (ScaleRL's eps_max, 5.0), not 1 + eps.
    Clip active: ratio > eps_high where A > 0 (TRL's cispo_clip_ratio). (B, T) each.
    """
    ratio = torch.exp(logp - logp_old)
    weight = ratio.clamp(max=eps_high).detach()
    return -weight * advantages * logp, ratio, (ratio > eps_high) & (advantages > 0)


@LOSSES.register("sapo")
def sapo_loss(logp: Tensor, logp_old: Tensor, advantages: Tensor, mask: Tensor, *,
              temperature_pos: Positive = 1.0, temperature_neg: Positive = 1.05) -> tuple[Tensor, Tensor, Tensor]:
    """SAPO (Soft Adaptive Policy Optimization; TRL's loss_type="sapo"): a sigmoid gate in place of the clip,
    l = -(4 / tau) sigmoid(tau (ratio - 1)) A, tau = temperature_pos where A > 0, else temperature_neg.

    Its gradient is A ∇ratio times 4 sigma(1 - sigma), 1 at ratio = 1, fading smoothly off-policy.
    Nothing is clipped: clip active is all False. (B, T) each.
    """
    ratio = torch.exp(logp - logp_old)
    tau = torch.where(advantages > 0, temperature_pos, temperature_neg)
    return -torch.sigmoid(tau * (ratio - 1.0)) * 4.0 / tau * advantages, ratio, torch.zeros_like(mask, dtype=torch.bool)


LOG_W_FLOOR = math.log(1e-8)  # VESPO's lower clamp of the sequence log-weight (its reference code's)


@LOSSES.register("vespo")
def vespo_loss(logp: Tensor, logp_old: Tensor, advantages: Tensor, mask: Tensor, *,
               k_pos: NonNegative = 2.0, lambda_pos: NonNegative = 3.0, k_neg: NonNegative = 3.0,
               lambda_neg: NonNegative = 2.0,
               is_weights: Annotated[Tensor | None, FromTrainer()] = None) -> tuple[Tensor, Tensor, Tensor]:
    """VESPO (TRL's loss_type="vespo"): l = -sg(phi(w)) A logp with the gamma weight
    phi(w) = exp(lambda + k log w - lambda w) (phi(1) = 1), w = exp(sum_t log ratio) the sequence's ratio
    (per-token log ratios clamped to [-20, 20], log w to [log 1e-8, 20]); k, lambda = k_pos, lambda_pos
    where A >= 0, else k_neg, lambda_neg (per token, so token advantages pick per token).

    is_weights (engine mismatch weights): their logs join log w instead of multiplying the loss, as TRL does.
    Clip active: all False. (B, T) each.
    """
    valid = as_float_mask(mask, logp.dtype)
    log_ratio = logp - logp_old
    with torch.no_grad():
        log_w = (log_ratio.clamp(-20.0, 20.0) * valid).sum(1, keepdim=True)  # (B, 1)
        if is_weights is not None:
            log_w = log_w + (torch.log(is_weights).clamp(LOG_W_FLOOR, 20.0) * valid).sum(1, keepdim=True)
        log_w = log_w.clamp(LOG_W_FLOOR, 20.0)
        nonneg = advantages >= 0
        k = torch.where(nonneg, k_pos, k_neg)
        lam = torch.where(nonneg, lambda_pos, lambda_neg).clamp(min=1e-4)
        phi = torch.exp(lam + k * log_w - lam * log_w.exp()).nan_to_num(nan=0.0, posinf=0.0, neginf=0.0)
    ratio = torch.exp(log_ratio)
    return -phi * advantages * logp, ratio, torch.zeros_like(mask, dtype=torch.bool)


# Engine/trainer mismatch correction (docs/algorithms.md §3): TRL's vllm_importance_sampling_mode values.
MISMATCH_IS_MODES = ("token_truncate", "token_mask", "sequence_truncate", "sequence_mask")
MISMATCH_THRESHOLD = 0.1  # |trainer - engine| log-prob gap (nats) a token counts as mismatched past


def mismatch_weights(logp_trainer: Tensor, logp_engine: Tensor, mask: Tensor, mode: str, is_max: float,
                     is_min: float | None = None) -> Tensor:
    """Importance weights (B, T) for tokens an engine sampled, against the trainer's own log-probs of
    them: ratio = exp(logp_trainer - logp_engine) per token (token_*) or its product over the row
    (sequence_*); *_truncate caps it to [is_min, is_max] (TIS), *_mask zeroes it outside that band
    (MIS; no lower bound when is_min is None). 0 on padding; no gradient."""
    check_choice("mismatch_is", mode, MISMATCH_IS_MODES)
    valid = mask.bool()
    diff = torch.where(valid, logp_trainer.detach() - logp_engine.detach(), 0.0)
    if mode.startswith("sequence"):
        diff = diff.sum(1, keepdim=True)
    ratio = torch.exp(diff.clamp(max=20.0))  # exp(20) is far past any cap: the clamp only avoids inf
    low = 0.0 if is_min is None else is_min
    if mode.endswith("truncate"):
        ratio = ratio.clamp(min=low, max=is_max)
    else:
        ratio = torch.where((ratio < low) | (ratio > is_max), 0.0, ratio)
    return torch.where(valid, ratio, 0.0)  # a sequence ratio (B, 1) broadcasts over its tokens


def mismatch_stats(logp_trainer: Tensor, logp_engine: Tensor, mask: Tensor,
                   weights: Tensor | None = None) -> dict[str, float]:
    """The engine/trainer gap on valid tokens: mean and max |diff| and the share past
    MISMATCH_THRESHOLD; with `weights` (mismatch_weights), their mean and the share not equal to the
    raw ratio (truncated or masked)."""
    valid = mask.bool()
    if not valid.any():
        return {}
    diff = (logp_trainer - logp_engine).abs()[valid]
    out = {"mismatch/abs_diff_mean": float(diff.mean()), "mismatch/abs_diff_max": float(diff.max()),
           "mismatch/frac_over": float((diff > MISMATCH_THRESHOLD).float().mean())}
    if weights is not None:
        w = weights[valid]
        out["mismatch/is_weight_mean"] = float(w.mean())
        out["mismatch/is_weight_min"] = float(w.min())
        raw = torch.exp((logp_trainer - logp_engine)[valid].clamp(max=20.0))
        out["mismatch/is_corrected_frac"] = float((~torch.isclose(w, raw)).float().mean())
    return out


def k3_kl(logp: Tensor, logp_ref: Tensor) -> Tensor:
    """k3 estimator of KL(pi || pi_ref) per token: exp(ref - logp) - (ref - logp) - 1. (B, T)."""
    delta = logp_ref - logp
    return torch.exp(delta) - delta - 1.0


def aggregate(per_token: Tensor, mask: Tensor, loss_agg: str,
              max_completion_length: int | None = None) -> Tensor:
    """Reduce a (B, T) per-token loss to a scalar.

    seq_mean_token_mean: mean over completions of each one's token mean (GRPO);
    token_mean: sum over valid tokens / their count (DAPO);
    seq_mean_token_sum_norm: sum / (B * max_completion_length), default T (Dr. GRPO);
    dapo (TRL's loss_type="dapo"): token_mean here; across an update's optimizer steps the trainer
    divides by the rollout batch's valid tokens over the number of steps, not each step's own
    (trainer.distributed.loss_weights), so equal to token_mean with one optimizer step per batch;
    bnpo (TRL's loss_type="bnpo"): token_mean of each micro-batch, which the trainer then averages
    over micro-batches and processes (loss_weights), so it depends on optim.micro_batch_size as TRL's
    on per_device_train_batch_size;
    seq_mean_token_sum: mean over completions of each one's token sum (LUSPO: a completion weighs by its length).
    """
    check_choice("loss_agg", loss_agg, LOSS_AGGS)
    m = as_float_mask(mask, per_token.dtype)
    total = per_token * m
    if loss_agg == "seq_mean_token_mean":
        return (total.sum(1) / m.sum(1).clamp(min=1)).mean()
    if loss_agg in BY_TOKENS or loss_agg == "bnpo":
        return total.sum() / m.sum().clamp(min=1)
    if loss_agg == "seq_mean_token_sum":
        return total.sum(1).mean()
    norm = max_completion_length if max_completion_length is not None else per_token.shape[1]
    if norm <= 0:
        raise ValueError(f"max_completion_length={norm} must be > 0")
    return total.sum() / (per_token.shape[0] * norm)


def policy_loss(name: str, *, logp: Tensor, logp_old: Tensor, advantages: Tensor, mask: Tensor,
                loss_agg: str, logp_ref: Tensor | None = None, beta: float = 0.0,
                max_completion_length: int | None = None, entropy: Tensor | None = None,
                entropy_coef: float = 0.0, is_weights: Tensor | None = None, keep: Tensor | None = None,
                kl_bias_correction: bool = False, **loss_options: float) -> tuple[Tensor, dict[str, float]]:
    """Policy loss `name` (a LOSSES entry) plus beta * k3 KL minus entropy_coef * entropy, aggregated
    by `loss_agg`. loss_options go to the registered loss (their defaults are the loss's own).

    logp, logp_old, advantages, mask, logp_ref, entropy: (B, T); entropy must carry the gradient
    when entropy_coef > 0. keep (B, T) 0/1 (the off-policy and top-entropy masks, algos.shaping)
    multiplies the surrogate's per-token loss; the aggregation still divides by `mask` (as TRL's).
    is_weights (B, T), from mismatch_weights, multiply the surrogate's per-token loss (not the KL or
    entropy terms) for rows an engine sampled, unless the loss takes them itself (vespo).
    kl_bias_correction: the k3 term is multiplied by the surrogate's ratio (with its gradient), which
    makes its gradient the unbiased reverse-KL one off-policy (DeepSeek-V3.2; TRL's use_bias_correction_kl).
    Returns (scalar loss with grad to logp, metrics: loss, clip_frac, ratio_mean, ratio_min,
    ratio_max, adv_mean, and kl when logp_ref is given).
    """
    surrogate = LOSSES[name]
    if beta > 0 and logp_ref is None:
        raise ValueError("beta > 0 needs logp_ref (reference-policy log-probs) for the KL term")
    loss_options = LOSSES.check_options(name, loss_options, positional=4, user=False)
    takes_is_weights = "is_weights" in from_trainer(surrogate)
    if takes_is_weights and is_weights is not None:
        loss_options["is_weights"] = is_weights.detach()
    per_token, ratio, active = surrogate(logp, logp_old.detach(), advantages.detach(), mask, **loss_options)
    if keep is not None:
        per_token = per_token * keep.detach().to(per_token.dtype)
    if is_weights is not None and not takes_is_weights:
        per_token = per_token * is_weights.detach()
    kl = k3_kl(logp, logp_ref.detach()) if logp_ref is not None else None
    if kl is not None and beta > 0:
        per_token = per_token + beta * (kl * ratio if kl_bias_correction else kl)
    if entropy_coef > 0:
        if entropy is None or not entropy.requires_grad:
            raise ValueError("entropy_coef > 0 needs the per-token entropy with its gradient")
        per_token = per_token - entropy_coef * entropy
    loss = aggregate(per_token, mask, loss_agg, max_completion_length)
    valid = mask.bool()
    with torch.no_grad():
        metrics = {
            "loss": float(loss),
            "clip_frac": float(masked_mean(active.to(ratio.dtype), valid)),
            "ratio_mean": float(masked_mean(ratio, valid)),
            "ratio_min": float(ratio[valid].min()) if valid.any() else float("nan"),
            "ratio_max": float(ratio[valid].max()) if valid.any() else float("nan"),
            "adv_mean": float(masked_mean(advantages, valid)),
        }
        if kl is not None:
            metrics["kl"] = float(masked_mean(kl, valid))
    return loss, metrics
