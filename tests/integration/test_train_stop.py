"""Stopping a run: SIGINT / SIGTERM with default settings (save_every=10, longer than the run) leave a
checkpoint from which --resume finishes with the metrics of a run never stopped; the log shows one
line per step; samples.html holds the prompts as written and their references."""

from __future__ import annotations

import html
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from botgrpo_cli.config import load_config
from botgrpo_cli.errors import Interrupted
from botgrpo_cli.trainer import train
from botgrpo_cli.trainer.reports import TIMING_KEYS

STEPS = 4
ROWS = 2 * 4  # prompts_per_step x group_size: the submits of one step
SMALL = ["rollout.prompts_per_step=2", "rollout.group_size=4", "rollout.max_new_tokens=48", "run.threads=1",
         "log.tensorboard=false", "reward.workers=1", "run.task=react_synth", "log.samples_every=3"]


@pytest.fixture(scope="module")
def pool(react_pool):
    return react_pool  # one react service for the session (starting Node + TypeScript costs seconds)


def _cfg(model_dir: Path, out: Path, *extra: str):
    return load_config(None, algo="bot_grpo", sets=[*SMALL, f"model.name_or_path={model_dir}", f"run.out_dir={out}",
                                                     f"run.steps={STEPS}", *extra])


def _strip(records: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k not in TIMING_KEYS} for r in records]


@pytest.fixture(scope="module")
def uninterrupted(tiny_model_dir, pool, tmp_path_factory):
    return train(_cfg(tiny_model_dir, tmp_path_factory.mktemp("full") / "run"), pool=pool)


class SignalOnSubmit:
    """The real pool; the `at`-th scoring request (made while the step generates) first sends `signum`
    to this process: a stop in the middle of a step, before its update."""

    def __init__(self, pool, at: int, signum: int):
        self.pool, self.at, self.signum, self.calls = pool, at, signum, 0

    def submit(self, *args, **kwargs):
        self.calls += 1
        if self.calls == self.at:
            os.kill(os.getpid(), self.signum)
        return self.pool.submit(*args, **kwargs)

    def __getattr__(self, name):
        return getattr(self.pool, name)


def _stopped(cfg, done: int, signum: int, **kwargs) -> None:
    """Train until the signal stops it: exit code, message and newest checkpoint all say step `done`."""
    with pytest.raises(Interrupted) as stopped:
        train(cfg, **kwargs)
    assert stopped.value.exit_code == 128 + signum
    assert f"after step {done}" in str(stopped.value) and "--resume --out" in str(stopped.value)
    saved = sorted(p.name for p in (Path(cfg.run.out_dir) / "checkpoints").iterdir())
    assert saved[-1] == f"step-{done:06d}", saved


def test_stops_while_generating_and_while_updating_save_and_resume_equals_an_uninterrupted_run(
        tiny_model_dir, pool, uninterrupted, tmp_path):
    """One run stopped twice, resumed each time: SIGINT while step 2 generates (step 1 done in this
    process: it saves step 1 with the random state step 1 ended with), then SIGTERM once step 2's
    update began (step 2 finishes, then it stops); the last resume ends like a run never stopped."""
    cfg = _cfg(tiny_model_dir, tmp_path / "run")
    _stopped(cfg, 1, signal.SIGINT, pool=SignalOnSubmit(pool, ROWS + 1, signal.SIGINT))

    def on_step(step, metrics):
        if step == 2:
            os.kill(os.getpid(), signal.SIGTERM)
    _stopped(cfg, 2, signal.SIGTERM, resume=True, pool=pool, on_step=on_step)
    resumed = train(cfg, resume=True, pool=pool)
    assert _strip(resumed.metrics) == _strip(uninterrupted.metrics)


def test_a_stop_before_the_first_step_saves_step_0_and_resumes_exactly(tiny_model_dir, pool, uninterrupted, tmp_path):
    cfg = _cfg(tiny_model_dir, tmp_path / "run")
    _stopped(cfg, 0, signal.SIGTERM, pool=SignalOnSubmit(pool, 1, signal.SIGTERM))
    cfg.run.steps = 1  # step 1 from the step-0 checkpoint shows it resumes exactly; the rest is as above
    resumed = train(cfg, resume=True, pool=pool)
    assert _strip(resumed.metrics) == _strip(uninterrupted.metrics[:1])


def test_samples_page_has_the_prompt_as_written_and_the_reference(uninterrupted):
    from botgrpo_tasks import get_task

    page = (uninterrupted.run_dir / "samples.html").read_text()
    assert [f"<h2>step {s}</h2>" in page for s in (1, 3, STEPS)] == [True] * 3  # first, every 3rd, last
    shown = [ex for ex in get_task("react_synth").train_examples() if html.escape(ex.prompt) in page]
    assert shown, "no training prompt appears whole on the page"
    assert html.escape(shown[0].reference["reference_code"]) in page
    assert "&lt;|im_start|&gt;" not in page.split("<details>")[0]  # the template only on demand
    assert "[-2, 2]" in page  # the legend says what a token reward's range is


def test_sigint_from_the_command_line_then_resume(tiny_model_dir, uninterrupted, tmp_path):
    """A real process with its output in a pipe (as CI and nohup have it): one line per step, a stop
    after step 1 saves it, `--resume` finishes the run with the same metrics."""
    out = tmp_path / "run"
    sets = [a for s in [*SMALL, f"model.name_or_path={tiny_model_dir}"] for a in ("--set", s)]
    argv = [sys.executable, "-m", "botgrpo_cli", "train", "--algo", "bot_grpo", "--out", str(out), *sets]
    proc = subprocess.Popen([*argv, "--steps", "40"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines, deadline = [], time.monotonic() + 240
    for line in proc.stdout:
        lines.append(line)
        if line.startswith("step 1/40") or time.monotonic() > deadline:
            break
    proc.send_signal(signal.SIGINT)
    rest, _ = proc.communicate(timeout=120)
    output = "".join(lines) + rest
    assert proc.returncode == 130 and "Traceback" not in output, output
    step_line = next(ln for ln in lines if ln.startswith("step 1/40"))
    for field in ("reward ", "success ", " s/step", "ETA "):
        assert field in step_line, step_line
    assert "interrupted: SIGINT after step" in output and f"--resume --out {out}" in output

    # The resume through the same command line, in this process (a second process start proves nothing more)
    from typer.testing import CliRunner

    from botgrpo_cli.cli import app

    resumed = CliRunner().invoke(app, [*argv[3:], "--steps", str(STEPS), "--resume"])
    assert resumed.exit_code == 0, resumed.output
    assert sum(ln.startswith("step ") and f"/{STEPS}  reward" in ln for ln in resumed.output.splitlines()) >= 2
    records = [json.loads(ln) for ln in (out / "metrics.jsonl").read_text().splitlines()]
    assert _strip(records) == _strip(uninterrupted.metrics)
