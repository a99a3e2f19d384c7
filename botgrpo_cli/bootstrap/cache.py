"""Where bootstrapped models live, and writing them atomically."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

INFO_FILE = "bootstrap.json"


def cache_root() -> Path:
    return Path(os.environ.get("BOTGRPO_CACHE") or Path.home() / ".cache" / "botgrpo")


def recipe_hash(recipe: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(recipe, sort_keys=True, default=str).encode()).hexdigest()[:12]


def model_dir(task: str, size: str, seed: int, recipe: dict[str, Any]) -> Path:
    return cache_root() / "models" / f"{task}-{size}-s{seed}-{recipe_hash(recipe)}"


def is_complete(path: Path, recipe: dict[str, Any]) -> bool:
    """A finished build of this recipe (the info file is written last, then the directory renamed)."""
    info = path / INFO_FILE
    if not info.is_file():
        return False
    try:
        return json.loads(info.read_text()).get("recipe_hash") == recipe_hash(recipe)
    except (OSError, ValueError):
        return False


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


def write_json(path: Path, data: dict[str, Any]) -> None:
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")

