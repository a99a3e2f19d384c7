"""Evaluation math (docs/algorithms.md §5)."""

from __future__ import annotations

SUCCESS_AT = 0.5  # a scored completion succeeds when its task's success metric is >= this


def passes(value: float) -> bool:
    """The one threshold for a 0/1-style metric (success, rendered): value >= SUCCESS_AT."""
    return float(value) >= SUCCESS_AT


def succeeded(metrics: dict[str, float], success_metric: str) -> bool:
    """The one success rule (training's logged `success`, evaluation's Sample.success): the scored
    completion's `success_metric` passes. An unscored completion (no metrics) fails."""
    return passes(metrics.get(success_metric, 0.0))


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k (Chen et al. 2021): 1 - C(n-c, k) / C(n, k).

    Computed as 1 - prod_{i=n-c+1}^{n} (1 - k/i), which never forms large binomials;
    1.0 when n - c < k. Raises ValueError when k > n or the counts are impossible.
    """
    if not (0 <= c <= n and k >= 1):
        raise ValueError(f"pass_at_k needs 0 <= c <= n and k >= 1; got n={n}, c={c}, k={k}")
    if k > n:
        raise ValueError(f"pass@{k} needs at least {k} samples per problem; got n={n}")
    if n - c < k:
        return 1.0
    miss = 1.0
    for i in range(n - c + 1, n + 1):
        miss *= 1.0 - k / i
    return 1.0 - miss
