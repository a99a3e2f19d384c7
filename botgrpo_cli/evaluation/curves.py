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


# reward/NAME keys that are the trainer's own figures, not a reward's metrics
OWN_REWARD_KEYS = frozenset({"reward/mean", "reward/std", "reward/masked", "reward/restarts", "reward/resent",
                             "reward/endpoint_failures", "reward/token_mean"})


def function_keys(records: Sequence[dict]) -> dict[str, str]:
    """Per reward function (or service of several): its name -> its reward/NAME/mean key."""
    keys = {k for r in records for k in r if k.startswith("reward/") and k.endswith("/mean") and k.count("/") >= 2}
    return {k[len("reward/"):-len("/mean")]: k for k in sorted(keys)}


def reward_metric_keys(records: Sequence[dict]) -> list[str]:
    """The rewards' own metrics (a service's, a function's, log_metric's): reward/NAME keys that are
    neither the trainer's figures nor per-function mean, std or failure counts."""
    per_function = ("/mean", "/std", "/failed")
    return sorted({k for r in records for k in r if k.startswith("reward/") and k not in OWN_REWARD_KEYS
                   and not (k.count("/") >= 2 and k.endswith(per_function))})


def panel_key(name: str) -> str | None:
    """The metrics.jsonl key of a panel named `name` (case-insensitive), else None."""
    return next((key for key, label in PANELS if label.lower() == name.lower()), None)
