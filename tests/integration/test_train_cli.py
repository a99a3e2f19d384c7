"""`botgrpo train` through the CLI: a real run, and bad input that ends in one line, exit 1, no run dir."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from botgrpo_cli.cli import app, main

TASK = "react_synth"
ROOT = Path(__file__).resolve().parents[2]
SMALL = ["rollout.prompts_per_step=2", "rollout.group_size=2", "rollout.max_new_tokens=16", "run.threads=1",
         "log.tensorboard=false", f"run.task={TASK}"]


@pytest.fixture(scope="module")
def model_dir() -> Path:
    os.environ.setdefault("BOTGRPO_CACHE", str(ROOT / ".cache" / "botgrpo"))
    from botgrpo_cli.bootstrap import bootstrap

    return bootstrap(TASK)


def _sets(*items: str) -> list[str]:
    return [arg for item in items for arg in ("--set", item)]


def test_cli_trains_and_reports_where_things_are(model_dir, tmp_path):
    out = tmp_path / "run"
    args = ["train", "--algo", "grpo", "--steps", "1", "--out", str(out),
            *_sets(*SMALL, f"model.name_or_path={model_dir}")]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert f"run directory: {out}" in result.output and "samples page:" in result.output
    for name in ("config.yaml", "metrics.jsonl", "samples.html", "curves.png", "checkpoints/step-000001/optim.pt"):
        assert (out / name).exists(), name
    again = CliRunner().invoke(app, args)  # the same --out again without --resume: refused, nothing lost
    assert again.exit_code != 0 and "--resume" in str(again.exception)
    assert len((out / "metrics.jsonl").read_text().splitlines()) == 1


FAIL_START = f"reward.command=[{sys.executable}, {ROOT / 'tests/fixtures/echo_service.py'}, --fail-start]"


@pytest.mark.parametrize("args,needle", [
    (["--set", "optim.lrr=1"], "did you mean lr"),
    (["--algo", "grpp"], "unknown algorithm preset 'grpp'"),
    (["--set", "model.name_or_path=/nonexistent/model"], "/nonexistent/model is not a model directory"),
    (["--set", "run.task=no_such_task"], "unknown task"),
    (["--set", FAIL_START], "echo"),
])
def test_bad_input_is_one_line_exit_1_and_no_run_dir(model_dir, tmp_path, capsys, args, needle):
    out = tmp_path / "run"
    argv = ["train", "--out", str(out), "--steps", "1", *_sets(*SMALL), *args]
    if "model.name_or_path" not in " ".join(args):
        argv += ["--set", f"model.name_or_path={model_dir}"]
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 1
    err = capsys.readouterr().err
    assert err.count("error:") == 1 and needle in err, err
    assert not out.exists()
