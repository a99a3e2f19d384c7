"""The local cache every part shares (bootstrapped models, converted GGUF files): where it is, and
writing a directory into it atomically. It sits below models and bootstrap, so neither imports the other
for it."""

from __future__ import annotations

import fcntl
import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator


def cache_root() -> Path:
    """$BOTGRPO_CACHE, else ~/.cache/botgrpo."""
    return Path(os.environ.get("BOTGRPO_CACHE") or Path.home() / ".cache" / "botgrpo")


@contextmanager
def atomic_dir(final: Path) -> Iterator[Path]:
    """Yield a temporary sibling directory; on success it replaces `final` in one rename."""
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", dir=final.parent))
    try:
        yield tmp
        if final.exists():  # --force, or a concurrent build that finished first
            shutil.rmtree(final)
        os.rename(tmp, final)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


@contextmanager
def one_builder(final: Path) -> Iterator[None]:
    """Hold the build lock of `final`: a second process building the same entry waits here, then
    finds it built (check for it again inside), instead of building it twice or replacing it under
    a reader."""
    final.parent.mkdir(parents=True, exist_ok=True)
    with open(final.parent / f".{final.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield
