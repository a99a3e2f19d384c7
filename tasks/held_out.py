"""The held-out rule every task follows: whether a prompt is held out for evaluation depends only on
a hash of its text, never on the seed or the row order, so train and eval never share a prompt and
every run of a task holds out the same ones."""

from __future__ import annotations

import hashlib
from typing import Any

from botgrpo_tasks.errors import TaskError

SYNTHETIC_EVAL_BYTE = 26  # a generated prompt is held out when its hash's first byte is below this: ~10%


def is_held_out(prompt: str) -> bool:
    """For generated tasks (arith_synth, react_synth), which draw prompts of one split from a grammar."""
    return hashlib.sha256(prompt.encode()).digest()[0] < SYNTHETIC_EVAL_BYTE


def split_by_hash(prompts: list[str], fraction: float, source: str, what: str) -> tuple[list[int], list[int]]:
    """For tasks read from a file (aime, prompts): (train indices, held-out indices in row order), the
    held-out ones the `fraction` of rows whose prompts' hashes sort first."""
    n_eval = max(1, round(len(prompts) * fraction))
    if n_eval >= len(prompts):
        raise TaskError(f"{source} has {len(prompts)} {what}(s), too few to hold out {fraction:.0%} for eval; "
                        f"add {what}s, lower eval_fraction, or pass eval_path=")
    by_hash = sorted(range(len(prompts)), key=lambda i: hashlib.sha256(prompts[i].encode()).hexdigest())
    held = set(by_hash[:n_eval])
    return [i for i in range(len(prompts)) if i not in held], sorted(held)


def eval_fraction(task: str, options: dict[str, Any], has_eval_path: bool) -> float:
    """The eval_fraction option (default 0.2), checked; 0.0 when eval_path gives the held-out rows."""
    if has_eval_path:
        if "eval_fraction" in options:
            raise TaskError(f"task {task!r}: give eval_path or eval_fraction, not both")
        return 0.0
    value = options.get("eval_fraction", 0.2)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 1:
        raise TaskError(f"task {task!r}: eval_fraction must be a number between 0 and 1 (exclusive), got {value!r}")
    return float(value)
