"""A real pretrained model end to end: SmolLM2-135M-Instruct from its GGUF file (ChatML template,
EOS <|im_end|>), evaluated on arith_synth and aime-format prompts, then a BoT-GRPO step with LoRA.
Checks the pipeline and the model's health (finite loss, parameters moved, text still text), not
quality. A few minutes on 2 cores; marked `real_model` (run alone with `-m real_model`)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from botgrpo_cli.cli import app

ROOT = Path(__file__).resolve().parents[2]
AIME_SAMPLE = ROOT / "tests" / "data" / "aime_sample.jsonl"

# About a minute on a quiet 2-core machine; the limit leaves room for a machine shared with other work.
pytestmark = [pytest.mark.real_model, pytest.mark.timeout(1500)]


def _looks_like_text(text: str) -> bool:
    """Words, not blank lines or one repeated character (what a destroyed model emits)."""
    letters = sum(c.isalpha() for c in text)
    return letters >= 5 and len(set(text.split())) >= 3


def test_gguf_becomes_a_normal_model_folder(smollm2_gguf, smollm2_dir):
    from transformers import AutoConfig

    from botgrpo_cli.models.loading import load_tokenizer
    from botgrpo_cli.trainer.policy import load_model

    config = AutoConfig.from_pretrained(smollm2_dir)
    assert config.model_type == "llama" and getattr(config, "quantization_config", None) is None
    tok = load_tokenizer(smollm2_dir)
    assert tok.eos_token == "<|im_end|>" and "<|im_start|>" in tok.chat_template
    assert tok.model_max_length == config.max_position_embeddings == 8192  # not GGUF's 1e30
    from botgrpo_cli.config import ModelConfig
    from botgrpo_cli.models.gguf import resolve_gguf

    bf16 = load_model(resolve_gguf(str(smollm2_gguf), "bfloat16"), ModelConfig(dtype="bfloat16"))
    assert bf16.dtype == torch.bfloat16 and sum(p.numel() for p in bf16.parameters()) == 134_515_008


PRECISION = {"off": "fp32 (model.autocast=off)", "bfloat16": "bf16 autocast (model.autocast=bfloat16"}


def _eval(tmp_path: Path, name: str, autocast: str, *args: str) -> dict:
    """`botgrpo eval` with the precision forced (the option's choice, not the CPU's: bf16 autocast runs
    everywhere, emulated without AMX or AVX512-BF16): text that reads as text, every sample scored."""
    out = tmp_path / name
    result = CliRunner().invoke(app, ["eval", "--n", "1", "--temperature", "0", "--threads", "2",
                                      "--autocast", autocast, "--out", str(out), *args])
    assert result.exit_code == 0, f"{result.output}\n{result.exception!r}"
    report = json.loads((out / "eval.json").read_text())
    entry = report["evaluations"][0]
    texts = [s["text"] for p in entry["problems"] for s in p["samples"]]
    assert texts and all(_looks_like_text(t) for t in texts), texts
    assert entry["precision"].startswith(PRECISION[autocast])
    assert all(s["status"] == "ok" for p in entry["problems"] for s in p["samples"])
    return report


def test_eval_on_the_aime_prompt_format_in_bf16(smollm2_gguf, tmp_path):
    """aime prompts through the chat template, the GGUF file as --model, bf16 autocast forced. (The
    arith_synth format in fp32 is evaluated after the LoRA step below, on the same model with its
    adapter: an eval of its own here added nothing but a minute of a busy machine's time.)"""
    _eval(tmp_path, "aime", "bfloat16", "--task", "aime", "--task-option", f"path={AIME_SAMPLE}",
          "--split", "all", "--model", str(smollm2_gguf), "--limit", "1", "--max-new-tokens", "32")


VARIED_REWARD = ROOT / "tests" / "fixtures" / "varied_reward.py"


@pytest.mark.parametrize("autocast", ["off", "bfloat16"])
def test_a_lora_bot_grpo_step_moves_the_adapter_and_keeps_the_text(autocast, smollm2_gguf, tmp_path, capsys):
    """One BoT-GRPO step with LoRA on SmolLM2, in each precision forced by model.autocast. The reward
    differs inside each group by construction (tests/fixtures/varied_reward.py), so the advantages
    are not zero and a step that works must move LoRA B (it starts at zero)."""
    gguf = str(smollm2_gguf)
    from botgrpo_cli.config import load_config
    from botgrpo_cli.trainer import train

    run = tmp_path / "run"
    cfg = load_config(None, algo="bot_grpo", sets=[
        f"model.name_or_path={gguf}", "model.lora_r=8", f"model.autocast={autocast}", "run.task=arith_synth",
        "run.steps=1", "rollout.prompts_per_step=2", "rollout.group_size=2", "rollout.max_new_tokens=24",
        f"reward.function={VARIED_REWARD}:alternating", "reward.workers=1",
        "run.threads=2", "log.tensorboard=false", f"run.out_dir={run}"])
    result = train(cfg)
    assert f"precision: {PRECISION[autocast]}" in " ".join(capsys.readouterr().err.split())  # the console writes to stderr
    assert cfg.optim.lr == pytest.approx(1e-4)  # pretrained, under 1B, LoRA: chosen, and recorded
    saved = (run / "config.yaml").read_text()
    assert "lr: 0.0001" in saved and "micro_batch_size:" in saved and "system_prompt:" in saved
    assert len(result.metrics) == 1
    m = result.metrics[0]
    assert m["reward/mean"] == pytest.approx(0.0)  # +1 and -1 in each group of two: the construction held
    assert math.isfinite(m["loss"]) and math.isfinite(m["grad_norm"]) and m["grad_norm"] > 0
    assert m["entropy"] > 0.1

    from safetensors.torch import load_file

    adapter = run / "checkpoints" / "step-000001" / "model"
    weights = load_file(adapter / "adapter_model.safetensors")
    lora_b = [w for k, w in weights.items() if "lora_B" in k]
    assert lora_b and any(w.abs().max() > 0 for w in lora_b)  # LoRA B starts at zero: it moved

    # the arith_synth prompt format through the chat template, in this precision, on the trained adapter
    _eval(tmp_path, "after", autocast, "--task", "arith_synth", "--model", str(adapter), "--limit", "2",
          "--max-new-tokens", "32")


def test_benchmarks_take_the_gguf_file_as_training_does(smollm2_gguf):
    """`bench rollout --model x.gguf` (and `bench step --vs trl`, through the same resolution) load the
    file the way training does, instead of handing its path to from_pretrained."""
    from botgrpo_cli.bench.peer_trl import _model_dir
    from botgrpo_cli.models.gguf import resolve_gguf
    from botgrpo_tasks import get_task

    gguf = str(smollm2_gguf)
    assert _model_dir(get_task("arith_synth"), gguf) == resolve_gguf(gguf, "float32")
    result = CliRunner().invoke(app, ["bench", "rollout", "--model", gguf, "--prompts", "1", "--group", "2",
                                      "--new-tokens", "4", "--repeats", "1", "--threads", "2"])
    assert result.exit_code == 0, result.output
    assert "speed-up of the lean loop over HF generate" in " ".join(result.output.split())
