"""Two training processes (gloo on CPU, launched by `botgrpo train --num-processes 2`) take the same
optimizer steps as one process over the same global batch (two mini-batch updates per step), resume
exactly, and only rank 0 writes."""

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

# token_mean normalises by the global token count (ranks hold different counts); micro-batches of 3
# over 4 rows per rank (8 in one process) make the accumulation uneven on purpose. Two off-policy
# updates per batch (rows dealt k, k+2, ...): each process's k-th mini-batch is its half of the
# one-process k-th mini-batch.
SETS = ["algo.mini_batches=2", "algo.mini_batch_split=rows", "run.task=arith_synth", "rollout.prompts_per_step=2", "rollout.group_size=4", "rollout.max_new_tokens=24",
        "rollout.per_prompt_seed=true", "algo.loss_agg=token_mean", "optim.micro_batch_size=3", "optim.lr=1e-2",
        "run.threads=1", "run.save_every=1", "run.keep_last=5", "log.samples_every=1", "reward.workers=1"]


def _weights(run_dir: Path, step: int) -> dict[str, torch.Tensor]:
    return load_file(str(run_dir / "checkpoints" / f"step-{step:06d}" / "model" / "model.safetensors"))


def _metrics(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def single_run(tiny_arith_model_dir, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("single") / "run"
    cfg = load_config(None, algo="bot_grpo", sets=[*SETS, "run.steps=2", f"model.name_or_path={tiny_arith_model_dir}"])
    cfg.run.out_dir = str(out)
    train(cfg)
    return out


def _launch(model_dir: Path, out: Path, cwd: Path, *extra: str) -> None:
    sets = [*SETS, f"model.name_or_path={model_dir}"]
    argv = [sys.executable, "-m", "botgrpo_cli", "train", "--num-processes", "2", "--algo", "bot_grpo",
            "--out", str(out), *[a for s in sets for a in ("--set", s)], *extra]
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, env=dict(os.environ), timeout=900)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]


def test_two_processes_step_like_one_over_the_global_batch(single_run, tiny_arith_model_dir, tmp_path):
    """Step 1, then --resume for step 2: both checkpoints must match the single-process run's (each
    step two mini-batch updates, so the weights also show the processes' k-th mini-batches agree)."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    out = tmp_path / "run"
    _launch(tiny_arith_model_dir, out, cwd, "--steps", "1")
    _launch(tiny_arith_model_dir, out, cwd, "--steps", "2", "--resume")
    single, double = _metrics(single_run), _metrics(out)
    assert [r["step"] for r in double] == [1, 2]  # one writer: no duplicated lines
    assert [r["update/steps"] for r in single] == [r["update/steps"] for r in double] == [2, 2]
    for a, b in zip(single, double):  # identical rollouts and scores on both layouts
        assert b["reward/mean"] == pytest.approx(a["reward/mean"])
        assert b["completion/length_mean"] == pytest.approx(a["completion/length_mean"])
        assert b["loss"] == pytest.approx(a["loss"], rel=1e-4, abs=1e-6)
        assert b["grad_norm"] == pytest.approx(a["grad_norm"], rel=1e-4)  # the averaged gradient's scale
    base = load_file(str(tiny_arith_model_dir / "model.safetensors"))
    for step in (1, 2):
        want, got = _weights(single_run, step), _weights(out, step)
        assert any(not torch.equal(want[k], base[k]) for k in want), "the step changed nothing: vacuous comparison"
        for k in want:  # AdamW's first steps move each weight by ~lr = 1e-2; rounding in the gradient
            # sums (another order over two processes) shows up below 1e-4, i.e. 1% of one step
            torch.testing.assert_close(got[k], want[k], rtol=0, atol=1e-4, msg=f"step {step}, {k}")
    assert list(cwd.iterdir()) == []  # no process wrote anywhere else
    assert len(list((out / "tb").glob("events.*"))) == 2  # one TensorBoard writer per launch
    assert (out / "samples.html").read_text().count("<h2>step 1</h2>") == 1
