"""One evaluation path: `botgrpo eval`'s sampling, the trainer's periodic evaluation, bootstrap's
base rate and `bench convergence` give the same success rate for the same model, prompts and seed,
and a LoRA checkpoint evaluates as its adapted model everywhere."""

from __future__ import annotations

import pytest
import torch

from botgrpo_cli.bench.convergence import EvalSpec, evaluate_model
from botgrpo_cli.bootstrap.base_rate import measure
from botgrpo_cli.evaluation import models
from botgrpo_cli.evaluation.metrics import success_rate
from botgrpo_cli.evaluation.sampling import Scoring, held_out
from botgrpo_cli.reward_client import RewardPool
from botgrpo_cli.rollout import FastEngine, SamplingParams
from botgrpo_cli.trainer.loop import held_out_success
from botgrpo_tasks import get_task

PROMPTS, SEED = 16, 20261130  # 16: at this seed some samples succeed and some fail


@pytest.fixture(scope="module")
def arith(tiny_arith_model_dir):
    task = get_task("arith_synth")
    model, tok = models.load(models.Target("model", str(tiny_arith_model_dir)))
    with RewardPool(task.service) as pool:
        yield task, model, tok, pool


def _params(task, seed=SEED):
    return SamplingParams(max_new_tokens=task.max_new_tokens, seed=seed, stop=tuple(task.stop))


def test_every_caller_gets_the_same_success_rate(arith, tiny_arith_model_dir):
    task, model, tok, pool = arith
    engine = FastEngine(model, tok)
    problems = held_out(engine, tok, task, Scoring.of_task(task, pool), _params(task), PROMPTS, batch_size=PROMPTS)
    rate = success_rate(problems)
    trainer = held_out_success(engine, tok, task, Scoring.of_task(task, pool), _params(task), PROMPTS, PROMPTS)
    bench = evaluate_model(tiny_arith_model_dir, EvalSpec("arith_synth", PROMPTS, 1, chunk=PROMPTS), pool,
                           threads=torch.get_num_threads())
    base = measure(task, model, tok, PROMPTS, SEED, lambda *_: None)
    assert trainer["eval/success"] == rate and trainer["eval/prompts"] == PROMPTS
    assert sum(bench["counts"]) / PROMPTS == rate and bench["failed"] == trainer["eval/failed_scoring"]
    # bootstrap samples in chunks of 64 prompts: with 16 prompts that is one chunk, as above
    assert base["base_success_rate"] == rate == base["base_metrics"][task.success_metric]
    assert base["n_measured"] == PROMPTS
    assert 0 < rate < 1  # a rate that could disagree: some samples succeed, some do not


def test_every_caller_evaluates_multi_turn_alike(arith, botgrpo_cache):
    """With a tool, each caller runs the turns: the same trajectories give the same rate."""
    from botgrpo_cli.bootstrap import bootstrap
    from botgrpo_cli.rollout.turns import build_settings, turns_over

    pool = arith[3]
    task = get_task("arith_synth", calculator=True)
    model_dir = bootstrap(task)
    model, tok = models.load(models.Target("model", str(model_dir)))
    settings = build_settings(["calculator"], None, None, task, {}, None, tool_workers=1)
    with turns_over(FastEngine(model, tok), tok, task, settings) as engine:
        problems = held_out(engine, tok, task, Scoring.of_task(task, pool), _params(task), PROMPTS, batch_size=PROMPTS)
        trainer = held_out_success(engine, tok, task, Scoring.of_task(task, pool), _params(task), PROMPTS, PROMPTS)
    spec = EvalSpec("arith_synth", PROMPTS, 1, chunk=PROMPTS, task_options={"calculator": True}, tools=["calculator"])
    bench = evaluate_model(model_dir, spec, pool, threads=torch.get_num_threads())
    base = measure(task, model, tok, PROMPTS, SEED, lambda *_: None)
    rate = success_rate(problems)
    assert all(s.turns == 2 and s.tool_calls == 1 for p in problems for s in p.samples)  # a call, then the answer
    assert trainer["eval/success"] == rate and trainer["eval/turns"] == 2
    assert sum(bench["counts"]) / PROMPTS == rate and bench["turns"] == 2
    assert base["base_success_rate"] == rate and base["measured_with_tools"] == ["calculator"]
    assert 0 < rate < 1


def test_a_lora_checkpoint_evaluates_as_the_adapted_model(arith, tiny_arith_model_dir, tmp_path):
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    task, _, tok, pool = arith
    base = AutoModelForCausalLM.from_pretrained(tiny_arith_model_dir)
    lora = get_peft_model(base, LoraConfig(r=4, lora_alpha=64, target_modules=["q_proj", "v_proj"]))
    torch.manual_seed(0)
    with torch.no_grad():  # a visible change: LoRA starts as the identity
        for name, p in lora.named_parameters():
            if "lora_B" in name:
                p.copy_(torch.randn_like(p) * 0.5)
    lora.save_pretrained(tmp_path / "adapter")
    tok.save_pretrained(tmp_path / "adapter")
    spec = EvalSpec("arith_synth", 8, 2, chunk=16)
    adapted = evaluate_model(tmp_path / "adapter", spec, pool)
    model, tok2 = models.load(models.Target("a", str(tmp_path / "adapter")))
    problems = held_out(FastEngine(model, tok2), tok2, task, Scoring.of_task(task, pool), _params(task), 8, 2,
                        batch_size=8)
    assert adapted["counts"] == [p.correct for p in problems]
    texts = {s.text for p in problems for s in p.samples}
    plain, _ = models.load(models.Target("b", str(tiny_arith_model_dir)))
    base_problems = held_out(FastEngine(plain, tok2), tok2, task, Scoring.of_task(task, pool), _params(task), 8, 2,
                             batch_size=8)
    assert texts != {s.text for p in base_problems for s in p.samples}  # the adapter was not ignored
