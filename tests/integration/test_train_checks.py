"""CI smoke checks (`run.fail_on`, `train --check`): each broken pipeline is caught, a healthy one passes."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest

from botgrpo_cli.config import load_config
from botgrpo_cli.errors import UserError
from botgrpo_cli.trainer import train
from botgrpo_cli.trainer.checks import CheckFailed, NothingScored, RunChecks

SMALL = ["rollout.prompts_per_step=2", "rollout.group_size=4", "run.threads=1", "log.tensorboard=false",
         "reward.workers=1", "run.task=react_synth", "run.steps=2"]
FLAT = "rollout.max_new_tokens=8"  # every completion is cut off: each scores -1, every group is flat


@pytest.fixture(scope="module")
def pool(react_pool):
    return react_pool  # one react service for the session (starting Node + TypeScript costs seconds)


def _train(model_dir: Path, out: Path, pool, algo: str, *sets: str):
    cfg = load_config(None, algo=algo, sets=[*SMALL, f"model.name_or_path={model_dir}", f"run.out_dir={out}", *sets])
    return train(cfg, pool=pool)


CASES = {  # check: (preset, settings that break the pipeline that way, what the line says)
    # 1e39 overflows float32: the entropy term, so the loss, is infinite
    "nonfinite": ("grpo", ["rollout.max_new_tokens=48", "algo.entropy_coef=1e39"], "step 1 has loss = (nan|-?inf)"),
    "masked": ("grpo", ["rollout.max_new_tokens=48", "reward.deadline_ms=1"], "completions of step 1 were masked"),
    "flat": ("bot_grpo", [FLAT], "constant on all 2 steps"),
    "frozen": ("grpo", [FLAT], "no parameter changed in 2 steps"),  # flat groups: GRPO advantages all 0
}


@pytest.mark.parametrize("check", sorted(CASES))
def test_each_broken_pipeline_fails_its_check(tiny_model_dir, pool, tmp_path, check):
    algo, sets, said = CASES[check]
    if check == "masked":  # unchecked it fails too, at the end: no completion of any step was scored
        with pytest.raises(NothingScored, match="every completion of all 1 step"):
            _train(tiny_model_dir, tmp_path / "unchecked", pool, algo, *sets, "run.steps=1")
    else:
        result = _train(tiny_model_dir, tmp_path / "unchecked", pool, algo, *sets, "run.steps=1")  # it "succeeds"
        if check == "nonfinite":  # issue 50: the infinite loss's step changed no weight, and its save holds none
            from botgrpo_cli.trainer import checkpoint

            assert result.metrics[0]["update/nonfinite_skipped"] == 1.0
            assert checkpoint.read(checkpoint.latest(result.run_dir)).state.step == 1  # read checks finiteness
    with pytest.raises(CheckFailed, match=f"check {check} failed: .*{said}"):
        _train(tiny_model_dir, tmp_path / "checked", pool, algo, *sets, f"run.fail_on=[{check}]")


def test_a_healthy_run_passes_every_check(tiny_model_dir, pool, tmp_path):
    result = _train(tiny_model_dir, tmp_path / "run", pool, "bot_grpo", "rollout.max_new_tokens=48",
                    "run.fail_on=[nonfinite, masked, flat, frozen]", "optim.lr=1e-2")
    assert [r["step"] for r in result.metrics] == [1, 2]


def test_an_unknown_check_is_one_line_before_anything_loads(tmp_path):
    cfg = load_config(None, sets=["run.fail_on=[nonfinit]", f"run.out_dir={tmp_path / 'run'}"])
    with pytest.raises(UserError, match="unknown check 'nonfinit'; known: nonfinite, masked, flat, frozen"):
        train(cfg)
    assert not (tmp_path / "run").exists()


def test_checks_read_the_step_metrics():
    checks = RunChecks(["nonfinite", "masked"], model=None)
    checks.after_step(1, {"loss": 0.1, "grad_norm": 2.0, "reward/masked": 0.0, "reward/mean": 0.2})
    with pytest.raises(CheckFailed, match="grad_norm = inf"):
        checks.after_step(2, {"loss": 0.1, "grad_norm": math.inf})
    with pytest.raises(CheckFailed, match="all 8 completions of step 3"):
        checks.after_step(3, {"reward/masked": 8.0, "reward/mean": math.nan})


def test_check_flag_exits_1_with_one_line(tiny_model_dir, tmp_path):
    sets = [a for s in [*SMALL, FLAT, f"model.name_or_path={tiny_model_dir}"] for a in ("--set", s)]
    proc = subprocess.run([sys.executable, "-m", "botgrpo_cli", "train", "--check", "--out", str(tmp_path / "run"),
                           *sets], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith("error: check flat failed"), proc.stderr
    assert (tmp_path / "run" / "checkpoints" / "step-000002").is_dir()  # the run itself is whole
