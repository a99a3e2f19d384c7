"""SIGINT / SIGTERM during training: stop at once and say, in one line, where the run can resume."""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

from botgrpo_cli.errors import Interrupted
from botgrpo_cli.trainer import checkpoint


class _Signalled(BaseException):
    def __init__(self, signum: int):
        self.signum = signum


def _raise(signum: int, frame) -> None:
    raise _Signalled(signum)


def resume_hint(run_dir: Path) -> str:
    last = checkpoint.latest(run_dir)
    if last is None:
        return f"no checkpoint was saved yet: start again (or set run.save_every) with --out {run_dir}"
    return f"the run can be resumed from {last} with `botgrpo train --resume --out {run_dir}`"


@contextmanager
def interruptible(run_dir: Path, step: Callable[[], int]) -> Iterator[None]:
    """Turn SIGINT / SIGTERM inside the block into Interrupted (exit code 128 + signal number)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {s: signal.signal(s, _raise) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    except (_Signalled, KeyboardInterrupt) as err:
        signum = getattr(err, "signum", signal.SIGINT)
        raise Interrupted(f"{signal.Signals(signum).name} after step {step()}; {resume_hint(run_dir)}",
                          128 + signum) from None
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
