"""What a person watching a run sees: a live bar in a terminal; in a log (CI, nohup, a file) one plain
line per step with its reward, success, seconds per step and time left; and, in both, a heartbeat while
one step runs long (a real model's generation takes minutes), at most every `heartbeat_s` seconds."""

from __future__ import annotations

import threading
import time
from typing import Callable

from rich.progress import Progress

from botgrpo_cli.console import console, is_log, progress_bar


def make_progress(disable: bool = False) -> Progress:
    return progress_bar("[bold]train", after="{task.fields[stats]}", transient=False, disable=disable)


def stats_line(m: dict[str, float]) -> str:
    parts = [f"reward {m.get('reward/mean', float('nan')):+.3f}"]
    if "success" in m:
        parts.append(f"success {m['success']:.2f}")
    if "eval/success" in m:
        parts.append(f"held-out success {m['eval/success']:.3f}")
    if "kl" in m:
        parts.append(f"kl {m['kl']:.4f}")
    if m.get("update/steps", 1) > 1:  # off-policy steps: how much the clip acts
        parts.append(f"clip {m.get('clip_frac', float('nan')):.3f}")
    parts.append(f"{m.get('time/step_s', 0.0):.2f} s/step")
    return "  ".join(parts)


def clock(seconds: float) -> str:
    """0:04:05 style, as the bar's own time-remaining column writes it."""
    s = max(0, round(seconds))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


class StepReport:
    """Per-step reporting for one training session (steps `done`+1 .. `total`)."""

    def __init__(self, total: int, done: int, disable: bool = False, heartbeat_s: float = 30.0,
                 write: Callable[[str], None] | None = None):
        self.total, self.first, self.disable = total, done, disable
        self.live = not disable and not is_log()
        self.heartbeat_s = heartbeat_s
        self.write = write or (lambda line: console.print(line, markup=False, soft_wrap=True))
        self.started = time.monotonic()
        self._step, self._phase, self._step_since, self._said = done + 1, "starting", self.started, self.started
        self._lock, self._stop = threading.Lock(), threading.Event()
        self._progress = make_progress(disable=not self.live)
        self._bar = None
        self._thread: threading.Thread | None = None

    def __enter__(self) -> StepReport:
        self._progress.__enter__()
        self._bar = self._progress.add_task("train", total=self.total, completed=self.first, stats="")
        if not self.disable and self.heartbeat_s > 0:
            self._thread = threading.Thread(target=self._beat, name="botgrpo-heartbeat", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._progress.__exit__(*exc)

    def phase(self, step: int, what: str) -> None:
        """Step `step` is now doing `what` (generating, scoring, updating, evaluating)."""
        now = time.monotonic()
        with self._lock:
            if step != self._step:
                self._step_since = now
            self._step, self._phase = step, what

    def step_done(self, step: int, metrics: dict[str, float]) -> None:
        now = time.monotonic()
        per_step = (now - self.started) / max(1, step - self.first)  # this session's wall time, evaluations included
        line = f"{stats_line(metrics)}  ETA {clock(per_step * (self.total - step))}"
        with self._lock:
            self._step, self._phase, self._step_since, self._said = step + 1, "starting", now, now
        if self.live:
            self._progress.update(self._bar, completed=step, stats=stats_line(metrics))
        elif not self.disable:
            self.write(f"step {step}/{self.total}  {line}")

    def _beat(self) -> None:
        while not self._stop.wait(min(1.0, self.heartbeat_s)):
            now = time.monotonic()
            with self._lock:
                due = now - self._said >= self.heartbeat_s and self._step <= self.total
                if due:
                    self._said = now
                step, phase, since = self._step, self._phase, self._step_since
            if not due:
                continue
            note = f"step {step}/{self.total}: {phase}, {clock(now - since)} into the step"
            if self.live:
                self._progress.update(self._bar, stats=note)
            else:
                self.write(note)
