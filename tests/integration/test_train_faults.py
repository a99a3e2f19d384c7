"""`botgrpo train` as a real process: SIGTERM says where to resume; --resume refuses changed settings."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SMALL = ["rollout.prompts_per_step=2", "rollout.group_size=2", "rollout.max_new_tokens=16", "run.threads=1",
         "log.tensorboard=false", "run.task=react_synth", "run.save_every=1", "reward.workers=1"]


def _argv(out: Path, model_dir: Path, *extra: str) -> list[str]:
    sets = [a for s in [*SMALL, f"model.name_or_path={model_dir}", *extra] for a in ("--set", s)]
    return [sys.executable, "-m", "botgrpo_cli", "train", "--algo", "grpo", "--out", str(out), *sets]


def _run(argv: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, timeout=300, env={**os.environ, "COLUMNS": "300"})


def test_sigterm_says_where_to_resume_and_resume_keeps_the_config(tiny_model_dir, tmp_path, capsys):
    out = tmp_path / "run"
    # Steps can take 30 ms on a quiet machine and old checkpoints are pruned, so wait for *a* checkpoint
    # past step 1 (not a named one) with far more steps than can finish before the signal.
    proc = subprocess.Popen([*_argv(out, tiny_model_dir), "--steps", "100000"], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env={**os.environ, "COLUMNS": "300"})
    deadline = time.monotonic() + 240

    def past_step_one() -> bool:
        return any(int(p.name.split("-")[1]) >= 2 for p in (out / "checkpoints").glob("step-*") if p.is_dir())

    while time.monotonic() < deadline and proc.poll() is None and not past_step_one():
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    output, _ = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM, output
    assert "Traceback" not in output
    line = next(ln for ln in output.splitlines() if "interrupted:" in ln)
    assert "SIGTERM after step" in line and f"--resume --out {out}" in line and "checkpoints/step-" in line

    # The refused resume through the command line's entry point, in this process (a second process start
    # proves nothing more: test_out_pointing_at_a_file_is_one_line runs one for a refusal)
    from botgrpo_cli.cli import main

    capsys.readouterr()
    with pytest.raises(SystemExit) as refused:
        main([*_argv(out, tiny_model_dir, "rollout.group_size=4", "log.every=2")[3:], "--steps", "500", "--resume"])
    changed = capsys.readouterr()
    assert refused.value.code == 1 and "Traceback" not in changed.out + changed.err
    said = " ".join((changed.out + changed.err).split())
    assert "rollout.group_size: run has 2, command line gives 4" in said and "log.every" not in said.split("only")[0]


def test_out_pointing_at_a_file_is_one_line(tiny_model_dir, tmp_path):
    target = tmp_path / "a-file"
    target.write_text("keep me")
    proc = _run([*_argv(target, tiny_model_dir), "--steps", "1"])
    assert proc.returncode == 1 and "is a file, not a folder" in proc.stdout + proc.stderr
    assert target.read_text() == "keep me"
