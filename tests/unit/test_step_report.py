"""What a run prints when its output is a log: one line per step, and a heartbeat while a step runs long."""

from __future__ import annotations

import re
import threading
import time

from botgrpo_cli.trainer.progress import StepReport, clock

METRICS = {"reward/mean": 0.25, "success": 0.5, "time/step_s": 1.5}


def test_one_line_per_step_with_reward_success_seconds_and_eta():
    lines: list[str] = []
    with StepReport(total=3, done=0, heartbeat_s=0, write=lines.append) as report:
        for step in (1, 2, 3):
            report.phase(step, "generating")
            report.step_done(step, METRICS)
    assert len(lines) == 3
    for step, line in enumerate(lines, 1):
        assert re.fullmatch(rf"step {step}/3  reward \+0\.250  success 0\.50  1\.50 s/step  ETA \d+:\d\d:\d\d", line)
    assert lines[-1].endswith("ETA 0:00:00")


def test_a_resumed_session_counts_from_its_first_step():
    lines: list[str] = []
    with StepReport(total=10, done=7, heartbeat_s=0, write=lines.append) as report:
        report.step_done(8, METRICS)
    assert lines == [lines[0]] and lines[0].startswith("step 8/10  ")


def test_heartbeat_while_a_step_runs_long_and_no_more_often_than_asked():
    lines: list[str] = []
    times: list[float] = []
    said = threading.Event()

    def write(line: str) -> None:
        lines.append(line)
        times.append(time.monotonic())
        said.set()

    with StepReport(total=5, done=0, heartbeat_s=0.2, write=write) as report:
        report.phase(1, "generating")
        assert said.wait(30), "no heartbeat while step 1 was generating"
        report.phase(1, "waiting for the reward service")
        said.clear()
        assert said.wait(30)
        report.step_done(1, METRICS)
    beats = [ln for ln in lines if not ln.startswith("step 1/5  reward")]
    assert beats[0].startswith("step 1/5: generating, 0:00:0") and "into the step" in beats[0]
    assert beats[1].startswith("step 1/5: waiting for the reward service")
    assert lines[-1].startswith("step 1/5  reward")
    assert all(b - a >= 0.2 for a, b in zip(times[:-2], times[1:-1]))  # beats at least heartbeat_s apart


def test_heartbeat_off_and_quiet_ranks_print_nothing():
    lines: list[str] = []
    with StepReport(total=2, done=0, disable=True, heartbeat_s=0.01, write=lines.append) as report:
        report.step_done(1, METRICS)
    assert lines == []


def test_clock():
    assert clock(0) == "0:00:00" and clock(3725.4) == "1:02:05" and clock(-3) == "0:00:00"
