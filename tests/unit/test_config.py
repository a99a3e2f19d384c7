"""Config: YAML + --set with typed parsing, presets, validation messages that name the field and fix."""

from __future__ import annotations

import dataclasses

import pytest
import yaml

from botgrpo_cli.config import Config, describe, load_config
from botgrpo_cli.errors import UserError


def test_defaults_resolve_the_bot_grpo_preset():
    cfg = load_config()
    assert cfg.algo.name == "bot_grpo" and cfg.algo.advantage == "bot_grpo"
    assert (cfg.algo.loss, cfg.algo.loss_agg, cfg.algo.loss_options) == (
        "clip", "seq_mean_token_mean", {"eps_low": 0.2, "eps_high": 0.2})


@pytest.mark.parametrize("name,adv,agg,hi,ds", [
    ("grpo", "grpo", "seq_mean_token_mean", 0.2, False), ("dr_grpo", "grpo", "seq_mean_token_sum_norm", 0.2, False),
    ("dapo", "grpo", "token_mean", 0.28, True), ("gspo", "grpo", "seq_mean_token_mean", 4e-4, False),
    ("pure", "pure", "token_mean", 0.2, False)])
def test_algo_preset_fills_unset_fields(name, adv, agg, hi, ds):
    a = load_config(algo=name).algo
    assert (a.advantage, a.loss_agg, a.loss_options["eps_high"], a.dynamic_sampling, a.overlong_shaping) == (
        adv, agg, hi, ds, ds)
    if name == "dr_grpo":
        assert a.advantage_options == {"scale": "none"}


def test_explicit_values_beat_the_preset_and_set_beats_yaml(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({"algo": {"name": "dapo", "loss_options": {"eps_high": 0.3}}, "optim": {"lr": 0.01},
                                    "rollout": {"stop": ["\n\n"]}}))
    cfg = load_config(path, sets=["optim.lr=3e-4", "algo.dynamic_sampling=false", "reward.options={a: 1}"])
    assert cfg.algo.loss_options == {"eps_high": 0.3} and cfg.algo.dynamic_sampling is False and cfg.algo.overlong_shaping is True
    assert cfg.optim.lr == 3e-4 and isinstance(cfg.optim.lr, float)
    assert cfg.rollout.stop == ["\n\n"] and cfg.reward.options == {"a": 1}


def test_set_parses_by_field_type():
    cfg = load_config(sets=["run.steps=7", "log.tensorboard=false", "rollout.max_new_tokens=null", "run.task=arith_synth"])
    assert cfg.run.steps == 7 and cfg.log.tensorboard is False and cfg.rollout.max_new_tokens is None
    assert cfg.run.task == "arith_synth"


@pytest.mark.parametrize("sets,algo,needle", [
    (["optim.lrr=1"], None, "did you mean lr"),
    (["optimm.lr=1"], None, "did you mean optim"),
    (["optim.lr=fast"], None, "optim.lr must be a number"),
    (["run.steps=2.5"], None, "run.steps must be an integer"),
    (["rollout.group_size=0"], None, "rollout.group_size must be > 0, got 0 (completions sampled per prompt"),
    (["model.dtype=float8"], None, "model.dtype must be one of float32, bfloat16, float16"),
    (["optim.lr"], None, "expected SECTION.KEY=VALUE"),
    (["run.distributed=fsdp", "rollout.engine=fast"], None, "is fsdp, which needs rollout.engine=vllm"),
    (["rollout.max_staleness=-1"], None, "rollout.max_staleness must be >= 0, got -1"),
    (["rollout.max_staleness=1", "run.distributed=fsdp", "rollout.engine=vllm"], None,
     "rollout.max_staleness must be 0 with run.distributed=fsdp"),
    (["rollout.max_staleness=2", "rollout.vllm_tensor_parallel_size=2"], None,
     "must be 0 with rollout.vllm_tensor_parallel_size > 1"),
    ([], "grpoo", "did you mean grpo"),
    (["algo.advantage=bot"], None, "did you mean bot_grpo"),
])
def test_bad_values_get_one_clear_message(sets, algo, needle):
    with pytest.raises(UserError) as err:
        load_config(sets=sets, algo=algo)
    assert needle in str(err.value)


def test_bad_yaml_file(tmp_path):
    with pytest.raises(UserError, match="not found"):
        load_config(tmp_path / "missing.yaml")
    (tmp_path / "bad.yaml").write_text("model: [1, 2\n")
    with pytest.raises(UserError, match="not valid YAML"):
        load_config(tmp_path / "bad.yaml")
    (tmp_path / "flat.yaml").write_text("lr: 1\n")
    with pytest.raises(UserError, match="expected sections"):
        load_config(tmp_path / "flat.yaml")


def test_saved_config_round_trips(tmp_path):
    cfg = load_config(algo="gspo", sets=["optim.lr=0.002"])
    cfg.save(tmp_path / "config.yaml")
    again = load_config(tmp_path / "config.yaml")
    assert again == cfg


def test_every_field_is_documented_once():
    text = describe()
    for section in dataclasses.fields(Config):
        for f in dataclasses.fields(section.default_factory()):
            assert f.metadata["help"] and f"{section.name}.{f.name} (" in text
