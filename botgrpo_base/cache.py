"""The local cache every part shares (bootstrapped models, converted GGUF files, the React service's
Node packages): where it is, and writing a directory into it atomically. It sits below the client and
the services, so both use one rule."""

from __future__ import annotations

import fcntl
import hashlib
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
    lock_path = lock_file(final)
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def lock_file(final: Path) -> Path:
    """Where the build lock of `final` lives: in the cache's own locks/ directory, keyed by the
    entry's absolute path, so no lock is left beside an entry (or in a user's --out directory).
    Lock files stay after the build: unlinking one another process may be waiting on would let a
    third lock a fresh file and build beside it."""
    key = hashlib.sha256(str(final.resolve()).encode()).hexdigest()[:16]
    return cache_root() / "locks" / f"{final.name}-{key}.lock"
