"""Named algorithm bundles (docs/algorithms.md §4): what the paper compares, as data."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Preset:
    """One `--algo NAME`: estimator, loss and their options. Copy the dicts before changing them."""

    advantage: str  # key of ADVANTAGES
    loss: str  # key of LOSSES
    loss_agg: str  # seq_mean_token_mean | token_mean | seq_mean_token_sum_norm
    advantage_options: dict[str, Any] = field(default_factory=dict)
    loss_options: dict[str, Any] = field(default_factory=dict)  # eps_low, eps_high
    dynamic_sampling: bool = False  # DAPO: drop zero-variance groups, refill with more prompts
    overlong_shaping: bool = False  # DAPO: add overlong_penalty to the scores
    mini_batches: int = 1  # optimizer steps per rollout batch, as the paper trained (README cites each)


def _clip(low: float, high: float) -> dict[str, float]:
    return {"eps_low": low, "eps_high": high}


PRESETS: dict[str, Preset] = {
    "grpo": Preset("grpo", "clip", "seq_mean_token_mean", loss_options=_clip(0.2, 0.2)),
    "bot_grpo": Preset("bot_grpo", "clip", "seq_mean_token_mean", loss_options=_clip(0.2, 0.2)),
    # BoT-GRPO without the run-on bias: outcome centred by the group, spans uncentred (docs/algorithms.md §2).
    "bot_grpo_outcome": Preset("bot_grpo", "clip", "seq_mean_token_mean", advantage_options={"baseline": "outcome"},
                               loss_options=_clip(0.2, 0.2)),
    "dr_grpo": Preset("grpo", "clip", "seq_mean_token_sum_norm", advantage_options={"scale": "none"},
                      loss_options=_clip(0.2, 0.2)),
    "dapo": Preset("grpo", "clip", "token_mean", loss_options=_clip(0.2, 0.28),
                   dynamic_sampling=True, overlong_shaping=True,
                   mini_batches=16),  # DAPO §4.1: 512 prompts x 16 responses, mini-batch 512: 16 updates
    "gspo": Preset("grpo", "gspo", "seq_mean_token_mean", loss_options=_clip(3e-4, 4e-4),
                   mini_batches=4),  # GSPO §5.1: each rollout batch partitioned into four minibatches
    "pure": Preset("pure", "clip", "token_mean", loss_options=_clip(0.2, 0.2)),
    # TRL 1.16's other loss_type values, with TRL's aggregation for each (docs/algorithms.md §3)
    "cispo": Preset("grpo", "cispo", "dapo", loss_options={"eps_high": 5.0}),  # ScaleRL's eps_max
    "sapo": Preset("grpo", "sapo", "seq_mean_token_mean"),
    "vespo": Preset("grpo", "vespo", "dapo"),
    "luspo": Preset("grpo", "gspo", "seq_mean_token_sum", loss_options=_clip(3e-4, 4e-4)),  # GSPO's ratio and clip
}

