"""The rule for NaN and infinity in training: a step whose loss or gradient is not finite changes no
weight, and a state holding a non-finite tensor is never written as a checkpoint.

Rewards are checked where they enter the batch (reward_client/scored.py `finite`); what is left is a
loss that overflows or a gradient that does (a bad learning rate, a model that diverges): that
optimizer step is skipped, counted in `update/nonfinite_skipped`, and the loss / grad_norm metrics
show it (`run.fail_on: [nonfinite]` ends the run there). The checkpoint check is the last guard:
whatever went wrong, the last good checkpoint stays the newest one.
"""

from __future__ import annotations

import math
from typing import Any, Iterable

import torch

from botgrpo_cli.trainer.distributed import Dist


def step_if_finite(opt: torch.optim.Optimizer, loss: float, grad_norm: float, dist: Dist = Dist()) -> bool:
    """opt.step() when the loss and the (global) gradient norm are finite on every process; else
    the gradients are dropped and the weights stay as they were. Whether it stepped."""
    ok = not dist.any(not (math.isfinite(loss) and math.isfinite(grad_norm)))  # every rank decides alike
    if ok:
        opt.step()
    opt.zero_grad(set_to_none=True)
    return ok


def nonfinite_tensors(named: Iterable[tuple[str, Any]]) -> list[str]:
    """The names of the floating-point tensors holding a NaN or an infinity, with how many."""
    bad = []
    for name, t in named:
        if isinstance(t, torch.Tensor) and t.is_floating_point():
            n = int((~torch.isfinite(t)).sum())
            if n:
                bad.append(f"{name} ({n} of {t.numel()})")
    return bad


def optimizer_tensors(state: dict) -> Iterable[tuple[str, Any]]:
    """(name, tensor) of an optimizer state dict's per-parameter state (AdamW's moments)."""
    for index, slots in (state.get("state") or {}).items():
        for slot, t in slots.items():
            yield f"optimizer state {index}.{slot}", t
