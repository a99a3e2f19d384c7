"""Steps to target on a metric curve: the one definition `botgrpo compare` and `bench convergence` use.

No imports on purpose: `botgrpo compare` loads it without torch.
"""

from __future__ import annotations

from collections.abc import Sequence


def first_reaching(values: Sequence[float], target: float) -> int | None:
    """Index of the first value at or above `target`, or None when none reaches it."""
    return next((i for i, v in enumerate(values) if v >= target), None)


# curves.png's panels: (metrics.jsonl key, panel name). `botgrpo compare --metric NAME` accepts a
# panel's name too, so what the picture calls "reward" is what the comparison can be asked for.
PANELS = [("reward/mean", "reward"), ("success", "success"), ("kl", "KL"), ("completion/length_mean", "length"),
          ("entropy", "entropy")]
HELD_OUT = {"success": "eval/success", "reward/mean": "eval/score"}  # panel key -> the held-out figure drawn in it


def panel_key(name: str) -> str | None:
    """The metrics.jsonl key of a panel named `name` (case-insensitive), else None."""
    return next((key for key, label in PANELS if label.lower() == name.lower()), None)
