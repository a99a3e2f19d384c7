"""Comparing the weights of two training runs that took the same AdamW steps with other rounding
(another process layout, micro-batching or summation order): what tolerance the update rule allows."""

from __future__ import annotations

import torch


def adamw_max_move(betas: tuple[float, float], updates: int) -> float:
    """The most `updates` AdamW steps (no weight decay, eps ignored) can move one weight, in units of
    lr, whatever the gradients: with bias correction m_t = sum_i a_i g_i and v_t = sum_i b_i g_i^2,
    so |m_t| / sqrt(v_t) <= sqrt(sum_i a_i^2 / b_i) (Cauchy-Schwarz); 1 at the first step."""
    b1, b2 = betas
    total = 0.0
    for t in range(1, updates + 1):
        a = [(1 - b1) * b1 ** (t - i) / (1 - b1 ** t) for i in range(1, t + 1)]
        b = [(1 - b2) * b2 ** (t - i) / (1 - b2 ** t) for i in range(1, t + 1)]
        total += sum(x * x / y for x, y in zip(a, b)) ** 0.5
    return total


def assert_same_steps(want: dict[str, torch.Tensor], got: dict[str, torch.Tensor], base: dict[str, torch.Tensor],
                      lr: float, betas: tuple[float, float], updates: int, share: float, where: str) -> None:
    """`got` took the steps `want` took from `base` (AdamW without weight decay, `updates` updates at
    `lr`): no weight further apart than two runs can be (each moved it at most lr * adamw_max_move),
    and each tensor's summed difference at most `share` of how far `want` moved it. Rounding reaches
    few weights (those with a gradient near zero, where AdamW makes a rounding difference a step of up
    to lr of either sign); a real difference (another batch or mini-batch, an unscaled gradient, a lost
    optimizer state) changes nearly all of them."""
    cap = 2 * lr * adamw_max_move(betas, updates) * (1 + 1e-3)  # each run moved each weight at most half of it
    assert any(not torch.equal(want[k], base[k]) for k in want), f"{where}: the step changed nothing"
    for k in want:
        diff, moved = (got[k] - want[k]).abs(), (want[k] - base[k]).abs()
        assert diff.max() <= cap, f"{where}, {k}: a weight differs by {diff.max():.3g}, more than AdamW allows"
        assert diff.sum() <= share * moved.sum() + 1e-6, (
            f"{where}, {k}: the runs differ by {diff.sum() / moved.sum().clamp_min(1e-12):.3g} of the movement")
