"""The vLLM engine end to end on the bootstrapped tiny react_synth model: batches with exact offsets,
behaviour log-probs that match the trainer's, weight updates visible in the next generation, and
`botgrpo train` steps with rollout.engine=vllm (arith_synth). Needs CUDA + vLLM (tests/gpu/conftest.py skips
otherwise); scripts/gpu_check.sh runs it."""

from __future__ import annotations

import copy
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from botgrpo_cli.rollout import HFEngine, SamplingParams
from botgrpo_cli.trainer.logprobs import batch_logps

PROMPTS = ["<Card title=\"a\">", "Write a Button with label \"ok\":", "<ul>", "Spec: a list of 3 items\n"]
SAMPLED = SamplingParams(max_new_tokens=32, temperature=1.0, seed=3)
GREEDY = SamplingParams(max_new_tokens=24, temperature=0.0, seed=0)


@pytest.fixture(scope="module")
def policy(tiny_model_dir):
    from transformers import AutoModelForCausalLM

    from botgrpo_cli.models.loading import load_tokenizer

    tok = load_tokenizer(str(tiny_model_dir))
    model = AutoModelForCausalLM.from_pretrained(str(tiny_model_dir), dtype=torch.float32).cuda()
    return model, tok


@pytest.fixture(scope="module")
def engine(policy, tiny_model_dir):
    from botgrpo_cli.rollout.vllm import VLLMEngine, VLLMOptions

    model, tok = policy
    options = VLLMOptions(gpu_memory_utilization=0.15, dtype="float32", enforce_eager=True, max_model_len=512)
    return VLLMEngine(model, tok, str(tiny_model_dir), options, seed=0)


def trainer_logps(model, batch, temperature: float) -> torch.Tensor:
    return batch_logps(model, batch.prompt_ids, batch.completion_ids, batch.mask, 0, temperature, 16)


def test_batch_layout_offsets_and_seeding(engine):
    batch = engine.generate(PROMPTS, 3, SAMPLED)
    assert batch.completion_ids.shape[0] == len(PROMPTS) * 3
    assert batch.group_ids.tolist() == [i for i in range(len(PROMPTS)) for _ in range(3)]
    for i, (text, offsets) in enumerate(zip(batch.texts, batch.offsets)):
        assert len(offsets) == int(batch.mask[i].sum())
        assert "".join(text[s:e] for s, e in offsets) == text  # offsets tile the text exactly
    again = engine.generate(PROMPTS, 3, SAMPLED)
    assert again.texts == batch.texts  # per-row seeds: same seed, same weights -> same batch
    shuffled = engine.generate(PROMPTS[::-1], 3, SAMPLED)
    assert shuffled.texts[-3:] == batch.texts[:3]  # a row's sample does not depend on its batch


def test_behaviour_logprobs_match_the_trainer(engine, policy):
    model, _ = policy
    batch = engine.generate(PROMPTS, 4, SAMPLED)
    ours = trainer_logps(model, batch, SAMPLED.temperature).cuda()
    diff = (batch.logp_old.cuda() - ours).abs()[batch.mask.cuda()]
    assert float(diff.mean()) < 2e-3 and float(diff.max()) < 5e-2, (float(diff.mean()), float(diff.max()))


def test_weight_update_is_visible_in_the_next_generation(engine, policy):
    model, tok = policy
    saved = {k: v.clone() for k, v in model.state_dict().items()}
    before = engine.generate(PROMPTS, 1, GREEDY)
    try:
        torch.manual_seed(0)
        with torch.no_grad():
            for p in model.parameters():
                p.add_(0.5 * p.std() * torch.randn_like(p))
        stale = (before.logp_old.cuda() - trainer_logps(model, before, 1.0).cuda()).abs()[before.mask.cuda()]
        assert float(stale.mean()) > 0.05  # the perturbation is large enough to be seen
        engine.sync_weights()
        after = engine.generate(PROMPTS, 1, GREEDY)
        assert after.texts != before.texts
        fresh = (after.logp_old.cuda() - trainer_logps(model, after, 1.0).cuda()).abs()[after.mask.cuda()]
        assert float(fresh.mean()) < 2e-3
        hf = HFEngine(copy.deepcopy(model).cpu(), tok).generate(PROMPTS, 1, GREEDY)  # the HF engine samples on CPU
        same = sum(a == b for a, b in zip(after.texts, hf.texts))
        assert same >= len(PROMPTS) - 1, (after.texts, hf.texts)  # greedy ties may split one row
    finally:
        model.load_state_dict(saved)
        engine.sync_weights()
    restored = engine.generate(PROMPTS, 1, GREEDY)
    assert restored.texts == before.texts


def test_training_steps_with_vllm_rollouts(tiny_arith_model_dir, tmp_path):
    """Two steps of `botgrpo train` on arith_synth (its math service needs only Python), with sleep
    mode on, so weights are pushed into a sleeping engine after each optimizer step."""
    out = tmp_path / "run"
    records = _train_with_vllm(tiny_arith_model_dir, out, 2, "rollout.vllm_sleep_mode=true")
    for r in records:
        assert r["loss"] is not None and math.isfinite(r["loss"])
        assert r["mismatch/abs_diff_mean"] < 0.05  # vLLM's behaviour log-probs vs the trainer's, per token
        assert "mismatch/is_weight_mean" in r  # the correction is on by default
    assert (out / "checkpoints").is_dir()


def test_async_rollouts_with_vllm_in_process(tiny_arith_model_dir, tmp_path):
    """rollout.max_staleness=2 with the in-process engine: its producer thread generates on the GPU
    while the trainer updates there; every batch within the bound, logged, and a fresh batch's engine
    log-probs still match the trainer's (the push before each batch reached the engine)."""
    records = _train_with_vllm(tiny_arith_model_dir, tmp_path / "run", 4, "rollout.max_staleness=2")
    assert all(0 <= r["async/staleness"] <= r["async/staleness_max"] <= 2 for r in records)
    assert all(r["mismatch/abs_diff_mean"] < 0.05 for r in records if r["async/staleness"] == 0)


def _train_with_vllm(model_dir, out: Path, steps: int, *extra: str) -> list[dict]:
    """`botgrpo train` on arith_synth (its math service needs only Python) with the vLLM engine;
    each step's metrics, every step checked present."""
    sets = ["run.task=arith_synth", "rollout.engine=vllm", "rollout.prompts_per_step=4", "rollout.group_size=4",
            "rollout.vllm_gpu_memory_utilization=0.15", "rollout.vllm_enforce_eager=true",
            "log.tensorboard=false", "run.save_every=1", *extra]
    argv = [sys.executable, "-m", "botgrpo_cli", "train", "--steps", str(steps), "--out", str(out),
            "--set", f"model.name_or_path={model_dir}", *[a for s in sets for a in ("--set", s)]]
    proc = subprocess.run(argv, capture_output=True, text=True, env=dict(os.environ), timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records] == list(range(1, steps + 1))
    return records
