"""Pure tensor functions for RL with token-level rewards (docs/algorithms.md §1-§5)."""

from botgrpo_cli.algos import pure as _pure  # noqa: F401  (registers the "pure" estimator)
from botgrpo_cli.algos.advantages import ADVANTAGES, apply_reward_return, compute_advantages
from botgrpo_cli.algos.dapo import overlong_penalty, zero_variance_groups
from botgrpo_cli.algos.losses import LOSSES, policy_loss
from botgrpo_cli.algos.masked import group_sum, isolate_failed, masked_mean, masked_sum
from botgrpo_cli.algos.metrics import pass_at_k
from botgrpo_cli.algos.presets import PRESETS, Preset
from botgrpo_cli.algos.spans import project_spans, token_rewards

__all__ = [
    "ADVANTAGES", "LOSSES", "PRESETS", "Preset", "compute_advantages", "group_sum", "isolate_failed", "masked_mean",
    "masked_sum", "overlong_penalty", "pass_at_k", "policy_loss", "project_spans", "apply_reward_return",
    "token_rewards", "zero_variance_groups",
]
