"""Estimator and loss options are typed and range-checked from their signatures: a bad value is one
line naming the option and its allowed values, when the config loads, before any model loads."""

from __future__ import annotations

import pytest
import torch
from typer.testing import CliRunner

from botgrpo_cli.algos import ADVANTAGES, LOSSES, PRESETS, compute_advantages, policy_loss
from botgrpo_cli.algos.options import OptionError, rules
from botgrpo_cli.cli import main
from botgrpo_cli.config import load_config
from botgrpo_cli.errors import UserError


@pytest.mark.parametrize("option,needle", [
    ("algo.advantage_options={scale: groupp}",
     "algo.advantage_options: scale='groupp' is not valid for advantage estimator 'bot_grpo'; "
     "allowed: group, batch, none (did you mean group?)"),
    ("algo.loss_options={eps_low: -5}",
     "algo.loss_options: eps_low=-5 is not valid for policy loss 'clip'; allowed: a number >= 0 and <= 1"),
    ("algo.advantage_options={process_rewards: [1]}", "process_rewards is not an option to set"),
    ("algo.advantage_options={std_correction: 2}", "allowed: 1, 0"),
])
def test_bad_option_is_one_line_before_any_model_loads(option, needle, capsys, tmp_path):
    # The model path does not exist: were it loaded first, the error would be about the model.
    argv = ["train", "--set", option, "--set", f"model.name_or_path={tmp_path / 'absent'}",
            "--out", str(tmp_path / "run")]
    with pytest.raises(SystemExit) as info:
        main(argv)
    captured = capsys.readouterr()
    err = (captured.out + captured.err).strip()
    assert info.value.code == 1 and "\n" not in err and needle in err, err
    assert not (tmp_path / "run").exists()


def test_yaml_strings_become_typed_values():
    cfg = load_config(sets=["algo.advantage_options={eps: 1e-6, scale: batch}", "algo.loss_options={eps_high: 1}"])
    assert cfg.algo.advantage_options == {"eps": 1e-6, "scale": "batch"}  # YAML reads 1e-6 as a string
    assert isinstance(cfg.algo.loss_options["eps_high"], float)
    with pytest.raises(UserError, match="temperature=0 is not valid .* allowed: a number > 0"):
        load_config(algo="pure", sets=["algo.advantage_options={temperature: 0}"])


@pytest.mark.parametrize("registry", [ADVANTAGES, LOSSES], ids=lambda r: r.kind)
def test_every_registered_option_declares_its_type_and_rule(registry):
    for name in registry:
        undeclared = set(registry.options(name, 4)) - set(rules(registry[name]))
        assert not undeclared, f"{registry.kind} {name!r}: annotate {sorted(undeclared)} with OneOf/Range/FromTrainer"


def test_every_preset_default_passes_its_own_rules():
    for preset in PRESETS:
        load_config(algo=preset)  # raises if a preset's option broke its estimator's or loss's rule


def test_library_calls_are_checked_too():
    b, t = 4, 3
    args = dict(token_rewards=torch.rand(b, t), scores=torch.rand(b), mask=torch.ones(b, t, dtype=torch.bool),
                group_ids=torch.tensor([0, 0, 1, 1]))
    with pytest.raises(OptionError, match="eps=-1.0 is not valid") as info:
        compute_advantages("grpo", eps=-1.0, **args)
    assert isinstance(info.value, ValueError)
    logp = torch.zeros(1, 2)
    with pytest.raises(ValueError, match="eps_high"):
        policy_loss("clip", logp=logp, logp_old=logp, advantages=logp, mask=logp + 1, loss_agg="token_mean",
                    eps_high=float("nan"))


def test_trl_loss_options_and_token_masks_are_range_checked_at_load():
    for algo, sets, message in (
            ("sapo", "algo.loss_options={temperature_pos: 0}", "temperature_pos=0 is not valid for policy loss 'sapo'"),
            ("grpo", "algo.loss_options={eps_low: 0.2, eps_high: 0.2, delta: -1}", "delta=-1 is not valid"),
            ("vespo", "algo.loss_options={k_neg: -2}", "k_neg=-2 is not valid"),
            ("grpo", "algo.top_entropy_quantile=1.5", "algo.top_entropy_quantile must be in \\[0, 1\\]"),
            ("grpo", "algo.off_policy_mask=-0.1", "algo.off_policy_mask must be >= 0")):
        with pytest.raises(UserError, match=message):
            load_config(algo=algo, sets=[sets])
    with pytest.raises(UserError, match="is_weights is not an option to set"):  # vespo's, from the trainer
        load_config(algo="vespo", sets=["algo.loss_options={is_weights: 1}"])
