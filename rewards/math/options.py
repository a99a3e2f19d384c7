"""The math service's request options, validated: a bad value is a `bad_request` naming the fix."""

from __future__ import annotations

import math
from dataclasses import dataclass

from botgrpo_rewards.backend import BackendError
from botgrpo_rewards.math.extract import DEFAULT_THINK_TAGS
from botgrpo_rewards.protocol import ScoreRequest
from botgrpo_rewards.thinking import think_options

MAX_REL_TOL = 0.1


@dataclass(frozen=True)
class MathOptions:
    steps: bool = False
    penalize_missing: bool = True
    rel_tol: float = 0.0  # 0: decimals compare exactly; a dataset with rounded golds sets e.g. 1e-3
    think_tags: tuple[str, str] | None = DEFAULT_THINK_TAGS  # None: no reasoning block expected
    think_open: bool = False  # the prompt opened the reasoning block (shared options: thinking.py)


def bool_option(request: ScoreRequest, name: str, default: bool) -> bool:
    value = request.options.get(name, default)
    if not isinstance(value, bool):
        raise BackendError(f"option '{name}' must be true or false", "bad_request")
    return value


def _rel_tol(request: ScoreRequest) -> float:
    value = request.options.get("rel_tol", 0.0)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or not 0 <= value <= MAX_REL_TOL:
        raise BackendError(f"option 'rel_tol' must be a number from 0 to {MAX_REL_TOL} (0: exact)", "bad_request")
    return float(value)


def read_options(request: ScoreRequest) -> MathOptions:
    tags, opened = think_options(request.options)
    return MathOptions(bool_option(request, "steps", False), bool_option(request, "penalize_missing", True),
                       _rel_tol(request), tags, opened)
