"""A TRL recipe through botgrpo on the tiny model: Trainer(args=GRPOConfig(loss_type=X, ...)) trains
with TRL's schedule, a reward function's wrong count stops the run at its first step, and TRL's
quickstart script with tools=[...] runs with one changed import (docs/from-trl.md)."""

from __future__ import annotations

import math
import runpy
import textwrap

import pytest
import torch
from datasets import Dataset
from transformers import get_scheduler
from trl import GRPOConfig

from botgrpo_cli import Config, LogConfig, RolloutConfig, RunConfig, Trainer
from botgrpo_cli.algos.trl_loss_types import _LOSS_TYPES, algo_fields
from botgrpo_cli.errors import UserError

ROWS = Dataset.from_list([{"prompt": f"{a}+{a}=", "answer": 2 * a} for a in range(8)])


def right_answer(completions, answer, **kwargs):
    return [float(str(a) in c) - 0.1 * len(c) for c, a in zip(completions, answer)]


@pytest.mark.parametrize("loss_type", sorted(_LOSS_TYPES))
def test_a_grpoconfig_trains_two_steps_with_each_loss_type_on_trls_schedule(loss_type, tiny_arith_model_dir, tmp_path):
    args = GRPOConfig(output_dir=str(tmp_path / "run"), use_cpu=True, report_to="none", loss_type=loss_type,
                      num_generations=2, per_device_train_batch_size=4, max_steps=2, max_completion_length=6,
                      learning_rate=1e-3, lr_scheduler_type="cosine", warmup_steps=1, logging_steps=1,
                      save_strategy="no")
    trainer = Trainer(model=str(tiny_arith_model_dir), reward_funcs=right_answer, train_dataset=ROWS, args=args)
    mapped, _ = algo_fields({"loss_type": loss_type})  # the loss mapping is trl_loss_types'; it reaches the run
    assert {k: getattr(trainer.config.algo, k) for k in ("loss", "loss_agg")} == {k: mapped[k] for k in ("loss", "loss_agg")}
    trainer.config.run.threads, trainer.config.log.samples_every = 1, 0
    result = trainer.train()
    assert [m["step"] for m in result.metrics] == [1, 2]
    assert all(math.isfinite(m["loss"]) and m["reward/masked"] == 0 for m in result.metrics)
    sched = get_scheduler("cosine", torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=1e-3),
                          num_warmup_steps=1, num_training_steps=2)
    expected = []
    for _ in range(2):
        expected.append(sched.get_last_lr()[0])
        sched.optimizer.step()
        sched.step()
    assert [m["lr"] for m in result.metrics] == pytest.approx(expected, abs=1e-15)  # 0 in warm-up, then 1e-3


def test_the_reference_sync_and_adaptive_entropy_run_between_steps(tiny_arith_model_dir, tmp_path):
    # alpha 1: after step 1 the reference is the policy, so step 2's KL (before its one update) is 0
    args = GRPOConfig(output_dir=str(tmp_path / "run"), use_cpu=True, report_to="none", num_generations=2,
                      per_device_train_batch_size=4, max_steps=2, max_completion_length=6, learning_rate=1e-2,
                      logging_steps=1, save_strategy="no", beta=0.5, sync_ref_model=True, ref_model_sync_steps=1,
                      ref_model_mixup_alpha=1.0, use_adaptive_entropy=True, entropy_target=100.0)
    trainer = Trainer(model=str(tiny_arith_model_dir), reward_funcs=right_answer, train_dataset=ROWS, args=args)
    trainer.config.run.threads, trainer.config.log.samples_every = 1, 0
    first, second = trainer.train().metrics
    assert first["grad_norm"] > 0 and abs(second["kl"]) < 1e-7  # step 1 moved the policy; the sync followed it
    assert (first["entropy_coef"], second["entropy_coef"]) == pytest.approx((0.005, 0.01))  # below target: up


def test_a_reward_returning_the_wrong_count_stops_the_run_at_its_first_step(tiny_arith_model_dir, tmp_path):
    def one_too_many(completions, **kwargs):
        return [0.0] * (len(completions) + 1)

    trainer = Trainer(model=str(tiny_arith_model_dir), reward_funcs=one_too_many, train_dataset=ROWS,
                      args=Config(rollout=RolloutConfig(group_size=2, prompts_per_step=2, max_new_tokens=4),
                                  run=RunConfig(steps=3, threads=1, out_dir=str(tmp_path / "run")),
                                  log=LogConfig(tensorboard=False, samples_every=0)))
    with pytest.raises(UserError, match=r"^step 1: reward function .*returned 5 items for 4 completions"):
        trainer.train()
    assert len((tmp_path / "run" / "metrics.jsonl").read_text().splitlines()) == 1
    assert not (tmp_path / "run" / "checkpoints").exists() or not any((tmp_path / "run" / "checkpoints").iterdir())


TOOLS = '''
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: the first integer
        b: the second integer
    """
    return a + b
'''

QUICKSTART = '''
from datasets import Dataset
from trl import GRPOConfig
from botgrpo_cli import Trainer as GRPOTrainer  # the one changed line: was `from trl import GRPOTrainer`

from calc_tools import add


def reward_num_unique_chars(completions, **kwargs):
    return [float(len(set(c))) for c in completions]


if __name__ == "__main__":
    dataset = Dataset.from_list([{"prompt": f"{a}+{a}="} for a in range(4)])
    training_args = GRPOConfig(output_dir=OUT, use_cpu=True, report_to="none", num_generations=2,
                               per_device_train_batch_size=4, max_steps=1, max_completion_length=4,
                               max_tool_calling_iterations=1, learning_rate=1e-3)
    trainer = GRPOTrainer(model=MODEL, reward_funcs=reward_num_unique_chars, train_dataset=dataset,
                          tools=[add], args=training_args)
    trainer.train()
'''


def test_trls_quickstart_with_tools_runs_with_one_changed_import(tiny_arith_model_dir, tmp_path, monkeypatch):
    script = tmp_path / "quickstart.py"
    (tmp_path / "calc_tools.py").write_text(TOOLS)
    monkeypatch.syspath_prepend(str(tmp_path))  # as python puts the script's folder first
    script.write_text(textwrap.dedent(QUICKSTART).replace("OUT", repr(str(tmp_path / "run")))
                      .replace("MODEL", repr(str(tiny_arith_model_dir))))
    runpy.run_path(str(script), run_name="__main__")  # as `python quickstart.py` runs it
    lines = (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()
    assert len(lines) == 1 and '"turns/mean"' in lines[0]
    config = (tmp_path / "run" / "config.yaml").read_text()
    assert f"{tmp_path / 'calc_tools.py'}:add" in config and "max_turns: 2" in config
