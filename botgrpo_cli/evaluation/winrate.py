"""Win rate of model A over model B from pairwise outcomes, with a seeded bootstrap interval.

An outcome is A's result in one judged pair: 1 (A won in both orders), 0 (B won in both orders)
or 0.5 (a tie, including a verdict that flips with the order) — docs/algorithms.md §5.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

OUTCOMES = (0.0, 0.5, 1.0)


def score_outcome(score_a: float | None, score_b: float | None) -> float:
    """The pairwise verdict of a judge that prefers the higher task score; an unscored completion
    loses to a scored one, two unscored ones tie. It gives the same verdict in both orders."""
    a = float("-inf") if score_a is None else score_a
    b = float("-inf") if score_b is None else score_b
    return 1.0 if a > b else 0.0 if a < b else 0.5


def bootstrap_ci(outcomes: Sequence[Sequence[float]], n_boot: int = 2000, seed: int = 0,
                 level: float = 0.95) -> tuple[float, float]:
    """Percentile interval of the win rate, resampling problems (a problem's pairs share a prompt,
    so they move together). `outcomes[p]` holds problem p's pair outcomes."""
    groups = [list(g) for g in outcomes if len(g)]
    if not groups:
        raise ValueError("no pairs to bootstrap")
    sums = np.array([sum(g) for g in groups], dtype=np.float64)  # (P,)
    counts = np.array([len(g) for g in groups], dtype=np.float64)  # (P,)
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(groups), size=(n_boot, len(groups)))  # (n_boot, P) problem indices
    rates = sums[draws].sum(1) / counts[draws].sum(1)  # (n_boot,)
    tail = (1.0 - level) / 2 * 100
    low, high = np.percentile(rates, [tail, 100 - tail])
    return float(low), float(high)


def summarize(outcomes: Sequence[Sequence[float]], seed: int = 0, n_boot: int = 2000) -> dict[str, float]:
    """Win rate, its 95% bootstrap interval and the win/tie/loss counts."""
    flat = [x for g in outcomes for x in g]
    bad = [x for x in flat if x not in OUTCOMES]
    if bad:
        raise ValueError(f"pair outcomes must be 0, 0.5 or 1; got {bad[:3]}")
    if not flat:
        raise ValueError("no pairs were judged")
    low, high = bootstrap_ci(outcomes, n_boot=n_boot, seed=seed)
    return {"win_rate": sum(flat) / len(flat), "ci_low": low, "ci_high": high, "pairs": float(len(flat)),
            "wins": float(flat.count(1.0)), "ties": float(flat.count(0.5)), "losses": float(flat.count(0.0))}
