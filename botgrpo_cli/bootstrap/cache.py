"""Where bootstrapped models live in the cache (botgrpo_base/cache.py) and how a finished build is recognised."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from botgrpo_base.cache import atomic_dir, cache_root

__all__ = ["INFO_FILE", "atomic_dir", "cache_root", "is_complete", "model_dir", "recipe_hash", "write_json"]

INFO_FILE = "bootstrap.json"


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


def write_json(path: Path, data: dict[str, Any]) -> None:
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")

