"""TRL 1.16's between-step controls (trainer/controls.py): the reference sync equals TRL's
SyncRefModelCallback on the same weights, at TRL's steps; the adaptive entropy coefficient follows
TRL's rule (no bonus before a measurement, up below the target, down above, within its bounds)."""

from __future__ import annotations

import copy
import math
from types import SimpleNamespace

import pytest
import torch
from trl.trainer.callbacks import SyncRefModelCallback

from botgrpo_cli import AlgoConfig, Config, ModelConfig, Trainer
from botgrpo_cli.errors import UserError
from botgrpo_cli.trainer import controls
from botgrpo_cli.trainer.checkpoint import TrainState
from botgrpo_cli.trl_args import from_trl


def test_the_reference_sync_is_trls_at_trls_steps():
    torch.manual_seed(0)
    policy, reference = torch.nn.Linear(3, 2), torch.nn.Linear(3, 2)
    theirs = copy.deepcopy(reference)
    for _ in range(2):
        SyncRefModelCallback._sync_target_model(policy, theirs, 0.6)
    controls.mix_into(reference, policy, 0.6, times=2)
    for ours, trl in zip(reference.parameters(), theirs.parameters()):
        torch.testing.assert_close(ours, trl, rtol=0, atol=0)
    # TRL syncs when global_step % N == 0: training steps of 4 optimizer steps cross N=3 at 3 | 6 | 9, 12
    assert [controls.syncs_between((k - 1) * 4, k * 4, 3) for k in (1, 2, 3)] == [1, 1, 2]
    assert controls.syncs_between(0, 5, 0) == 0


def _session(**algo):
    return SimpleNamespace(cfg=Config(algo=AlgoConfig(**algo)), state=TrainState(0, 0), ref=None, policy=None)


def test_adaptive_entropy_follows_trls_rule():
    s = _session(entropy_coef=0.01, entropy_target=0.5, entropy_coef_delta=0.02, entropy_coef_max=0.04)
    assert controls.step_config(s).algo.entropy_coef == 0.0  # none measured yet: no bonus (TRL's inf start)
    seen = []
    for entropy in (0.4, 0.3, 0.2, 0.9, 0.1):
        metrics = {"entropy": entropy}
        controls.after_step(s, 1, metrics)
        seen += [metrics["entropy_coef"], controls.step_config(s).algo.entropy_coef]
    # below the target: up by delta to the max; above: down, and no bonus on the next step
    assert seen == pytest.approx([0.03, 0.03, 0.04, 0.04, 0.04, 0.04, 0.02, 0.0, 0.04, 0.04])
    assert s.state.entropy == {"coef": pytest.approx(0.04), "last_entropy": 0.1}  # saved in state.json
    assert controls.step_config(_session(entropy_coef=0.3)).algo.entropy_coef == 0.3  # off: the fixed coefficient


def test_trl_fields_map_onto_the_controls_and_bad_combinations_are_one_line():
    cfg = from_trl({"output_dir": "o", "use_cpu": True, "report_to": "none", "max_steps": 1, "beta": 0.04,
                    "sync_ref_model": True, "ref_model_sync_steps": 64, "use_adaptive_entropy": True,
                    "entropy_target": 0.3})
    assert (cfg.algo.ref_sync_steps, cfg.algo.ref_mixup_alpha, cfg.algo.entropy_target) == (64, 0.6, 0.3)
    with pytest.raises(UserError, match="ref_sync_steps needs a reference model"):
        Trainer(args=Config(algo=AlgoConfig(ref_sync_steps=8)))
    with pytest.raises(UserError, match="ref_sync_steps with LoRA"):
        Trainer(args=Config(algo=AlgoConfig(ref_sync_steps=8, beta=0.1), model=ModelConfig(lora_r=4)))
    with pytest.raises(UserError, match="must lie in"):
        Trainer(args=Config(algo=AlgoConfig(entropy_target=0.2, entropy_coef=2.0)))

