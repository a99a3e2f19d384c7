"""Where a benchmark figure came from: the commit of the code that made it, when, and how loaded
the machine was — written into the benchmark's own JSON so a published figure can name them."""

from __future__ import annotations

import os
import subprocess
from datetime import datetime, timezone
from pathlib import Path

_SOURCE = Path(__file__).resolve().parents[2]


def git_commit(path: Path = _SOURCE) -> tuple[str | None, bool | None]:
    """(commit, has uncommitted changes outside docs/) of the checkout holding `path`; (None, None)
    outside git."""
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(path), *args], capture_output=True, text=True,
                              timeout=10, check=True).stdout.strip()
    try:
        commit = git("rev-parse", "HEAD")
        # changes to the code, not to docs/ (where the benchmarks write their own records and pages)
        dirty = bool(git("status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude)docs"))
    except (OSError, subprocess.SubprocessError):
        return None, None
    return commit, dirty


def provenance() -> dict:
    commit, dirty = git_commit()
    return {"commit": commit, "dirty": dirty,
            "written": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "loadavg": [round(x, 2) for x in os.getloadavg()]}
