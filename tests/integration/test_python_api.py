"""The Python trainer as a TRL user writes it (docs/python-api.md): an in-memory Dataset with a lambda
reward trains on a tiny model; a GGUF file by its name with conversational rows, a reward function
from a file and LoRA from a peft LoraConfig."""

from __future__ import annotations

import math

import torch
import yaml
from datasets import Dataset
from safetensors.torch import load_file

from botgrpo_cli import Config, LogConfig, RolloutConfig, RunConfig, Trainer
from botgrpo_cli.trainer.reports import TIMING_KEYS

QUIET = LogConfig(tensorboard=False, samples_every=0)


def test_an_in_memory_dataset_and_a_lambda_train_two_steps_and_resume_exactly(tiny_arith_model_dir, tmp_path):
    dataset = Dataset.from_list([{"prompt": f"{a}+{a}=", "answer": 2 * a} for a in range(12)])
    steps: list[int] = []

    def trainer(total: int, out: str = "run") -> Trainer:
        return Trainer(
            model=str(tiny_arith_model_dir),
            reward_funcs=lambda completions, answer, **kwargs: [float(str(a) in c) - 0.1 * len(c)
                                                                for c, a in zip(completions, answer)],
            train_dataset=dataset,
            args=Config(rollout=RolloutConfig(group_size=4, prompts_per_step=2, max_new_tokens=8),
                        run=RunConfig(steps=total, threads=1, save_every=0, out_dir=str(tmp_path / out)), log=QUIET),
            on_step=lambda step, metrics: steps.append(step))

    result = trainer(2).train()
    assert steps == [1, 2] and [m["step"] for m in result.metrics] == [1, 2]
    for m in result.metrics:
        assert m["reward/masked"] == 0 and math.isfinite(m["reward/mean"])
    written = yaml.safe_load((result.run_dir / "config.yaml").read_text())
    assert written["run"]["task"] == "prompts" and written["run"]["task_options"]["path"].endswith(".parquet")
    assert written["run"]["task_options"]["eval_path"] == written["run"]["task_options"]["path"]  # all rows train
    resumed = trainer(3).train(resume_from_checkpoint=True)  # the same Trainer(...) with more steps
    assert steps == [1, 2, 3] and [m["step"] for m in resumed.metrics] == [1, 2, 3]
    whole = trainer(3, "whole").train()  # never interrupted: the resumed run continues it exactly
    assert _untimed(resumed.metrics) == _untimed(whole.metrics)
    assert _last_weights(resumed.run_dir).keys() == _last_weights(whole.run_dir).keys()
    assert all(torch.equal(a, b) for a, b in zip(_last_weights(resumed.run_dir).values(),
                                                 _last_weights(whole.run_dir).values()))


def _untimed(records: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k not in TIMING_KEYS} for r in records]


def _last_weights(run_dir) -> dict:
    return load_file(str(sorted((run_dir / "checkpoints").glob("step-*"))[-1] / "model" / "model.safetensors"))


def test_a_gguf_by_name_a_reward_file_and_a_peft_lora_config(smollm2_gguf, tmp_path):
    from peft import LoraConfig

    reward_file = tmp_path / "rewards.py"
    reward_file.write_text("def short(completions, **kwargs):  # conversational data: completions are messages\n"
                           "    return [-float(len(c[0]['content'])) for c in completions]\n")
    trainer = Trainer(
        model=str(smollm2_gguf), reward_funcs=[f"{reward_file}:short"],
        train_dataset=[{"prompt": [{"role": "user", "content": f"Name a {thing}."}]} for thing in ("colour", "fruit")],
        peft_config=LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"]),
        args=Config(rollout=RolloutConfig(group_size=2, prompts_per_step=2, max_new_tokens=6),
                    run=RunConfig(steps=1, threads=1, save_every=0, out_dir=str(tmp_path / "run")), log=QUIET))
    assert trainer.config.model.lora_r == 4 and trainer.config.model.lora_target_modules == ["q_proj", "v_proj"]
    result = trainer.train()
    assert result.metrics[0]["reward/masked"] == 0 and result.metrics[0]["reward/mean"] < 0
    assert (result.run_dir / "checkpoints").is_dir()
