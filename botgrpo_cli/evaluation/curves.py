"""Steps to target on a metric curve: the one definition `botgrpo compare` and `bench convergence` use.

No imports on purpose: `botgrpo compare` loads it without torch.
"""

from __future__ import annotations

from collections.abc import Sequence


def first_reaching(values: Sequence[float], target: float) -> int | None:
    """Index of the first value at or above `target`, or None when none reaches it."""
    return next((i for i, v in enumerate(values) if v >= target), None)
