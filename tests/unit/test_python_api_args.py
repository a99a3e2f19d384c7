"""Trainer(...) turns TRL-shaped arguments into one checked Config, and says what to do instead of
the GRPOTrainer arguments it has no counterpart for."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from datasets import Dataset, IterableDataset

from botgrpo_cli import AlgoConfig, Config, ModelConfig, RewardConfig, RolloutConfig, RunConfig, Trainer
from botgrpo_cli.errors import UserError


def reward(completions, **kwargs):
    return [0.0 for _ in completions]


SPEC = "my_rewards.py:score"  # a function by its file: checked for its form here, imported when a run starts


def test_reward_funcs_become_functions_a_service_or_services():
    assert Trainer(reward_funcs=[reward, "f.py:g"]).config.reward.function == [reward, "f.py:g"]
    assert Trainer(reward_funcs=reward).config.reward.function is reward
    assert Trainer(reward_funcs="math").config.reward.service == "math"
    mixed = Trainer(reward_funcs=["math", reward, reward]).config.reward.services
    assert mixed == {"math": 1.0, "reward": {"function": reward}, "reward_2": {"function": reward}}
    with pytest.raises(UserError, match="both name the reward"):
        Trainer(reward_funcs=reward, args=Config(reward=RewardConfig(service="math")))
    with pytest.raises(UserError, match="reward_funcs must be callables"):
        Trainer(reward_funcs=[reward, 3])
    with pytest.raises(UserError, match="looks like a reward model"):
        Trainer(reward_funcs="OpenAssistant/reward-model-deberta-v3-large-v2")  # TRL's reward-model-by-id


def test_the_args_are_typed_checked_and_left_unchanged():
    args = Config(algo=AlgoConfig(name="dapo"))
    trainer = Trainer(model="some/model", args=args)
    assert trainer.config.algo.loss_agg == "token_mean" and args.algo.loss_agg is None  # preset on a copy
    assert trainer.config.model.name_or_path == "some/model" and args.model.name_or_path is None
    with pytest.raises(UserError, match="rollout.group_size must be an integer"):
        Trainer(args=Config(rollout=RolloutConfig(group_size=2.5)))
    with pytest.raises(UserError, match=r"Config\(rollout=...\) must be a RolloutConfig"):
        Trainer(args=Config(rollout={"group_size": 4}))
    with pytest.raises(UserError, match="give one"):
        Trainer(model="a/b", args=Config(model=ModelConfig(name_or_path="c/d")))


def test_trl_arguments_without_a_counterpart_say_what_to_do_instead():
    with pytest.raises(UserError, match="on_step=fn"):
        Trainer(callbacks=[object()])
    with pytest.raises(UserError, match="tokenizer is loaded with the model"):
        Trainer(processing_class=object())
    Trainer(processing_class=None)  # TRL's default value is accepted
    with pytest.raises(TypeError, match="unexpected keyword argument 'modle'"):
        Trainer(modle="x")
    with pytest.raises(UserError, match="args must be a botgrpo_cli.Config, a TRL GRPOConfig or a dict"):
        Trainer(args=["num_generations", 4])


def test_datasets_are_written_once_by_content_and_streams_give_what_the_run_draws(tmp_path, monkeypatch):
    monkeypatch.setenv("BOTGRPO_CACHE", str(tmp_path))
    rows = [{"prompt": f"q{i}", "answer": i} for i in range(50)]
    args = Config(rollout=RolloutConfig(prompts_per_step=4), run=RunConfig(steps=3))
    first = Trainer(reward_funcs=SPEC, train_dataset=Dataset.from_list(rows), args=args).config.run.task_options
    again = Trainer(reward_funcs=SPEC, train_dataset=rows, args=args).config.run.task_options
    assert first["path"] == again["path"] == first["eval_path"]
    stream = IterableDataset.from_generator(lambda: iter(rows))
    drawn = Trainer(reward_funcs=SPEC, train_dataset=stream, args=args).config.run.task_options
    assert len(Dataset.from_parquet(drawn["path"])) == 12  # steps x prompts_per_step
    held = Trainer(reward_funcs=SPEC, train_dataset=rows, eval_dataset=rows[:5], args=args).config.run.task_options
    assert held["eval_path"] != held["path"] and len(Dataset.from_parquet(held["eval_path"])) == 5
    with pytest.raises(UserError, match="both give the prompts"):
        Trainer(reward_funcs=SPEC, train_dataset=rows, args=Config(run=RunConfig(task="aime")))
    with pytest.raises(UserError, match="no rows"):
        Trainer(reward_funcs=SPEC, train_dataset=[])


def test_a_reward_functions_contract_error_reaches_the_run_through_several_services():
    from botgrpo_cli.reward_client.combined import CombinedPool, ServiceSpec

    errors = {"math": None, "f": "reward function f raised ContractError: returned 9 items for 8 completions"}
    pool = CombinedPool([ServiceSpec("math"), ServiceSpec("f")],
                        lambda spec: SimpleNamespace(contract_error=errors[spec.name], close=lambda: None))
    assert pool.contract_error == errors["f"]  # what RunChecks stops the run with (trainer/loop.py)
