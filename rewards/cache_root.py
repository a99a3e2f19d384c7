"""Where botgrpo keeps what it builds or installs once per machine (bootstrapped models, converted
GGUF files, the React checker's Node packages). It lives here, the bottom of the services, so the
client (botgrpo_cli.cache) and the services share one rule."""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    """$BOTGRPO_CACHE, else ~/.cache/botgrpo."""
    return Path(os.environ.get("BOTGRPO_CACHE") or Path.home() / ".cache" / "botgrpo")
