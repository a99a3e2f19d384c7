"""Settings that are valid one by one but make a run learn nothing: refused, or warned about once.

Whether an estimator has nothing to learn from groups of one is decided by running it on a probe
batch (one completion per group, varied rewards), never by its name.
"""

from __future__ import annotations

from typing import Callable

import torch

from botgrpo_cli.algos import compute_advantages
from botgrpo_cli.config import Config
from botgrpo_cli.errors import UserError


def _learns_from_singletons(cfg: Config) -> bool:
    """Does the estimator give any non-zero advantage when each group holds one completion?"""
    gen = torch.Generator().manual_seed(0)
    b, t = 4, 6
    scores = torch.rand(b, generator=gen) * 2 - 1
    rho = (torch.rand(b, t, generator=gen) * 2 - 1) * (cfg.reward.lambda_tok != 0)
    token_rewards = cfg.reward.lambda_seq * scores[:, None] + cfg.reward.lambda_tok * rho
    options = dict(cfg.algo.advantage_options or {})
    try:
        adv = compute_advantages(cfg.algo.advantage, token_rewards=token_rewards, scores=scores,
                                 mask=torch.ones(b, t, dtype=torch.bool), group_ids=torch.arange(b), **options)
    except TypeError:  # the probe cannot speak for this estimator's options: do not guess
        return True
    return bool(adv.abs().max() > 0)


def check_settings(cfg: Config, warn: Callable[[str], None], resume_step: int = 0) -> None:
    """Raise UserError for a run that cannot learn; `warn` (one line each) for a run that does nothing."""
    if cfg.rollout.temperature == 0:
        raise UserError("rollout.temperature=0 is greedy decoding: every completion of a group is the same, so "
                        "group-relative advantages are 0, and log-probs divide by the temperature; use e.g. 1.0")
    if cfg.rollout.top_k == 1 or cfg.rollout.min_p == 1:
        option = "top_k=1" if cfg.rollout.top_k == 1 else "min_p=1"
        raise UserError(f"rollout.{option} keeps only the most likely token: every completion of a group is the same "
                        "(greedy), so group-relative advantages are 0; use top_k 0 or > 1, min_p below 1")
    if cfg.rollout.group_size == 1 and not _learns_from_singletons(cfg):
        raise UserError(f"rollout.group_size=1 with algo.advantage={cfg.algo.advantage}: each completion is its own "
                        "group's baseline, so every advantage is 0 and nothing learns; use rollout.group_size >= 2")
    if cfg.run.steps == 0:
        warn("run.steps=0: no training step will run")
    elif resume_step >= cfg.run.steps:
        warn(f"run.steps={cfg.run.steps} but the checkpoint is at step {resume_step}: no training step will run; "
             "raise --steps to train further")
