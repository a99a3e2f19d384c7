"""Two controls TRL 1.16 runs between optimizer steps, as it defines them (grpo_trainer.py,
callbacks.SyncRefModelCallback):

- reference sync (TR-DPO; TRL's sync_ref_model): every algo.ref_sync_steps optimizer steps the
  reference becomes (1 - alpha) x reference + alpha x policy, alpha = algo.ref_mixup_alpha;
- adaptive entropy (Skywork-OR1; TRL's use_adaptive_entropy): the entropy bonus algo.entropy_coef is
  applied only while the last measured entropy is at or below algo.entropy_target (none before the
  first measurement), and after each step moves by algo.entropy_coef_delta, up when the step's
  entropy is at or below the target and down otherwise, within [entropy_coef_min, entropy_coef_max].

botgrpo runs both once per training step, after its algo.mini_batches x algo.epochs optimizer steps
(one by default, where this is TRL's per-step rule exactly): the reference is mixed once for each
multiple of ref_sync_steps those steps crossed, with the policy as the step left it.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from botgrpo_cli.config import Config


def entropy_state(s: Any) -> dict | None:
    """The adaptive controller's state, {coef, last_entropy}, kept in the checkpoint's state.json (a
    resume goes on from it); None when algo.entropy_target is unset."""
    if s.cfg.algo.entropy_target is None:
        return None
    if s.state.entropy is None:  # last_entropy inf: none measured yet, so the first step has no bonus
        s.state.entropy = {"coef": s.cfg.algo.entropy_coef, "last_entropy": math.inf}
    return s.state.entropy


def applied_coef(state: dict, target: float) -> float:
    """The bonus this step applies: the held coefficient while the last entropy is at or below the target."""
    return state["coef"] if state["last_entropy"] <= target else 0.0


def adapt(state: dict, entropy: float, a: Any) -> None:
    """After a step that measured `entropy` (the mean over its trained tokens): move the coefficient."""
    step = a.entropy_coef_delta if entropy <= a.entropy_target else -a.entropy_coef_delta
    state["coef"] = min(a.entropy_coef_max, max(a.entropy_coef_min, state["coef"] + step))
    state["last_entropy"] = entropy


def step_config(s: Any) -> Config:
    """The Config a training step runs with: algo.entropy_coef the adaptive controller's applied value."""
    state = entropy_state(s)
    if state is None:
        return s.cfg
    coef = applied_coef(state, s.cfg.algo.entropy_target)
    return dataclasses.replace(s.cfg, algo=dataclasses.replace(s.cfg.algo, entropy_coef=coef))


def syncs_between(before: int, after: int, every: int) -> int:
    """Multiples of `every` in (before, after]: the reference syncs optimizer steps before..after cross."""
    return after // every - before // every if every else 0


def mix_into(reference: Any, policy: Any, alpha: float, times: int = 1) -> None:
    """reference <- (1 - alpha) reference + alpha policy, `times` times over (TRL's _sync_target_model)."""
    import torch

    with torch.no_grad():
        for _ in range(times):
            for ref, new in zip(reference.parameters(), policy.parameters(), strict=True):
                ref.mul_(1.0 - alpha).add_(new.to(ref.dtype), alpha=alpha)


def after_step(s: Any, step: int, metrics: dict[str, float]) -> None:
    """The controls after training step `step` (metrics: reduced over processes): sync the reference,
    move the entropy coefficient (logged as entropy_coef, the value the next step starts from)."""
    a = s.cfg.algo
    if a.ref_sync_steps and s.ref is not None:
        from botgrpo_cli.trainer.update import updates_per_batch

        per = updates_per_batch(s.cfg)
        mix_into(s.ref, s.policy, a.ref_mixup_alpha, syncs_between((step - 1) * per, step * per, a.ref_sync_steps))
    state = entropy_state(s)
    if state is not None and math.isfinite(metrics.get("entropy", math.nan)):
        adapt(state, metrics["entropy"], a)
        metrics["entropy_coef"] = state["coef"]
