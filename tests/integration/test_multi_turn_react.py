"""Repair turns on react_synth (rollout.max_turns=2): the react service checks each attempt, its
diagnostic comes back as the next user message, the final attempt decides and every attempt's spans
reach that attempt's tokens. Real tiny model, real Node checker."""

from __future__ import annotations

import pytest
import torch

from botgrpo_cli.config import load_config
from botgrpo_cli.rollout import FastEngine, HFEngine, SamplingParams
from botgrpo_cli.rollout.turns import MultiTurn, TurnSettings
from botgrpo_cli.trainer import train
from botgrpo_cli.turns.feedback import service_feedback

SMALL = ["run.task=react_synth", "rollout.prompts_per_step=2", "rollout.group_size=2", "rollout.max_new_tokens=48",
         "run.threads=1", "optim.micro_batch_size=4", "log.tensorboard=false", "run.save_every=0", "run.steps=2",
         "rollout.max_turns=2"]


@pytest.fixture(scope="module")
def pool():
    from botgrpo_cli.reward_client import RewardPool

    with RewardPool("react", workers=1) as running:
        yield running


def test_greedy_repair_transcripts_equal_on_both_engines(tiny_model_dir, pool):
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from botgrpo_tasks import get_task

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        task = get_task("react_synth")
        tok = AutoTokenizer.from_pretrained(tiny_model_dir)
        model = AutoModelForCausalLM.from_pretrained(tiny_model_dir).eval()
        examples = task.train_examples()[:3]
        prompts = [task.format_prompt(ex, tok) for ex in examples]
        env = service_feedback(pool, dict(task.service_options), 30_000, task.success_metric)
        runs = {}
        for engine in (FastEngine(model, tok), HFEngine(model, tok)):
            turns = MultiTurn(engine, tok, TurnSettings(max_turns=2, environment=env, environment_deadline_s=60))
            batch = turns.generate(prompts, 1, SamplingParams(max_new_tokens=64, temperature=0.0), rows=examples)
            runs[type(engine).__name__] = (batch, turns.scores)
    finally:
        torch.set_num_threads(threads)
    (fast, fast_scores), (hf, hf_scores) = runs["FastEngine"], runs["HFEngine"]
    assert fast.texts == hf.texts and fast.turns == hf.turns
    assert {i: r.score for i, r in fast_scores.items()} == {i: r.score for i, r in hf_scores.items()}
    revised = [i for i, t in enumerate(fast.turns) if len(t) == 2]
    assert revised  # the tiny model's first attempts fail the checks
    for i in revised:
        (a0, b0), (a1, _) = fast.turns[i]
        between = fast.texts[i][fast.offsets[i][b0 - 1][1]:fast.offsets[i][a1][0]]
        assert "The checker rejected it" in between and not bool(fast.loss_mask[i, b0:a1].any())
        first_turn_end = fast.offsets[i][b0 - 1][1]
        assert fast_scores[i].metrics["attempts"] == 2 and fast_scores[i].metrics["first_attempt_all_ok"] == 0
        assert any(s.end <= first_turn_end for s in fast_scores[i].spans)  # the first attempt's spans kept


@pytest.mark.parametrize("engine", ["fast", "hf"])
def test_repair_turns_train(tiny_model_dir, pool, tmp_path, engine):
    cfg = load_config(None, algo="bot_grpo", sets=[*SMALL, f"rollout.engine={engine}", "run.eval_every=2",
                                                   "run.eval_prompts=2"])
    cfg.model.name_or_path, cfg.run.out_dir = str(tiny_model_dir), str(tmp_path / "run")
    result = train(cfg, pool=pool)
    assert [m["step"] for m in result.metrics] == [1, 2]
    for m in result.metrics:
        assert m["turns/mean"] > 1 and m["reward/masked"] == 0 and m["turns/masked_tokens"] > 0
        assert m["reward/attempts"] > 1
    last = result.metrics[-1]  # the held-out evaluation, on this engine, revises too
    assert last["eval/turns"] > 1 and last["eval/failed_scoring"] == 0


def test_repair_turns_evaluate(tiny_model_dir, tmp_path):
    import json

    from typer.testing import CliRunner

    from botgrpo_cli.cli import app

    out = tmp_path / "eval"
    result = CliRunner().invoke(app, ["eval", "--task", "react_synth", "--model", str(tiny_model_dir), "--out", str(out),
                                      "--n", "2", "--limit", "3", "--max-turns", "2", "--no-render",
                                      "--max-new-tokens", "48", "--threads", "1"])
    assert result.exit_code == 0, result.output
    report = json.loads((out / "eval.json").read_text())
    figures = report["evaluations"][0]["aggregates"]
    assert figures["turns_mean"] > 1.0 and figures["failed_scoring"] == 0
    samples = [s for p in report["evaluations"][0]["problems"] for s in p["samples"]]
    assert any(s["turns"] == 2 and "The checker rejected it" in s["text"] for s in samples)
    assert all(s["metrics"]["attempts"] == s["turns"] for s in samples)


def test_bench_convergence_evaluates_with_the_repair_turns_it_trained_with(tiny_model_dir, pool):
    from botgrpo_cli.bench.convergence import Settings, evaluate_model

    settings = Settings("react_synth", ["grpo"], [0], 2, 1, [0.5], "all_ok", 4, 2,
                        sets=["rollout.max_turns=2", "rollout.max_new_tokens=48"])
    spec = settings.eval_spec()
    assert spec.max_turns == 2 and spec.max_new_tokens == 48
    record = evaluate_model(tiny_model_dir, spec, pool)
    assert record["prompts"] == 4 and record["failed"] == 0 and record["turns"] > 1  # the final attempt decides
    assert 0 <= record["means"]["first_attempt_all_ok"] <= record["means"]["all_ok"]  # a repair can only add
