"""The reward contract: each service's outcomes, best first, and the check that options keep them ordered.

What BoT-GRPO weighs is a completion's mean token reward: its score on every token plus span rewards
where they fall (docs/algorithms.md §1). Spans never overlap, so each token's span reward lies between the
most negative and the most positive span reward its outcome can carry, and the mean token reward lies
in [lowest score + most negative span, highest score + most positive span]. When every outcome's
lowest mean is above the next outcome's highest, the order holds for every tokenizer and every
length: a completion cannot climb past a better outcome by being shorter, longer or less checkable.
See PROTOCOL.md ("The reward contract") for the table of each service.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

from botgrpo_rewards.backend import BackendError


@dataclass(frozen=True)
class Outcome:
    """One outcome a service distinguishes: the score it earns and the span rewards it may carry."""

    name: str
    score: tuple[float, float]  # lowest, highest sequence score
    spans: tuple[float, float] = (0.0, 0.0)  # most negative (<= 0), most positive (>= 0) span reward

    def mean_bounds(self) -> tuple[float, float]:
        """Bounds of the mean token reward (score plus spans) of any completion with this outcome."""
        return self.score[0] + min(0.0, self.spans[0]), self.score[1] + max(0.0, self.spans[1])


def check_order(service: str, outcomes: Sequence[Outcome]) -> None:
    """Raise a bad request when some outcome could earn as much as a better one (list is best first)."""
    for better, worse in zip(outcomes, outcomes[1:]):
        low, high = better.mean_bounds()[0], worse.mean_bounds()[1]
        if not low > high:
            raise BackendError(
                f"{service} options break the reward order: '{better.name}' can earn a mean token reward as low "
                f"as {low:g} but '{worse.name}' as high as {high:g}; change the options so that the first stays "
                f"above the second (the bounds are in rewards/PROTOCOL.md, 'The reward contract')", "bad_request")


def number_option(options: dict[str, Any], name: str, default: float, low: float, high: float) -> float:
    """A finite number option in [low, high]; anything else is a bad request naming the range."""
    value = options.get(name, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or not low <= value <= high:
        raise BackendError(f"option '{name}' must be a number in [{low:g}, {high:g}] (got {value!r})", "bad_request")
    return float(value)


def bool_option(options: dict[str, Any], name: str, default: bool) -> bool:
    """A true/false option; anything else is a bad request."""
    value = options.get(name, default)
    if not isinstance(value, bool):
        raise BackendError(f"option '{name}' must be true or false", "bad_request")
    return value
