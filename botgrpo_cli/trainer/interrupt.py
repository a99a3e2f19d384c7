"""SIGINT / SIGTERM during training: stop soon, save, and say in one line how to resume.

A signal during a step's generation, scoring or log-prob passes stops at once: nothing has changed
the weights or the optimizer since the last completed step, so the loop saves that step (with the
random state it ended with). Once a step's update has begun, the stop waits for the step to finish
(a second signal then stops at once, saving nothing new). Either way the saved checkpoint continues
exactly like a run that was never stopped.
"""

from __future__ import annotations

import signal
import threading
from pathlib import Path

from botgrpo_cli.console import console
from botgrpo_cli.trainer import checkpoint


class Stopped(BaseException):
    """Raised in the main thread when a stop signal arrives (a BaseException: no `except Exception` eats it)."""

    def __init__(self, signum: int, forced: bool = False):
        self.signum, self.forced = signum, forced

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name


def resume_hint(run_dir: Path) -> str:
    last = checkpoint.latest(run_dir)
    if last is None:
        return f"no checkpoint was saved: start again with --out {run_dir}"
    return f"the run can be resumed from {last} with `botgrpo train --resume --out {run_dir}`"


class StopGuard:
    """Installs the handlers for the block (main thread only). `hold()` starts a stretch a signal may
    not cut (a step's update and bookkeeping); `release()` ends it and raises the stop held back."""

    def __init__(self) -> None:
        self.pending: int | None = None
        self.holding = False
        self.why = ""
        self._previous: dict = {}

    def __enter__(self) -> StopGuard:
        if threading.current_thread() is threading.main_thread():
            self._previous = {s: signal.signal(s, self._handle) for s in (signal.SIGINT, signal.SIGTERM)}
        return self

    def __exit__(self, *exc) -> None:
        for s, handler in self._previous.items():
            signal.signal(s, handler)

    def _handle(self, signum: int, frame) -> None:
        if not self.holding:
            raise Stopped(signum)
        if self.pending is not None:  # asked twice: stop now, saving nothing new
            raise Stopped(signum, forced=True)
        self.pending = signum
        console.print(f"{signal.Signals(signum).name}: stopping once done ({self.why}); send it again to stop at "
                      "once", markup=False, soft_wrap=True)

    def hold(self, why: str) -> None:
        self.holding, self.why = True, why

    def release(self) -> None:
        self.holding = False
        if self.pending is not None:
            raise Stopped(self.pending)
