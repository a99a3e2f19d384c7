"""The folder the React checker's and the render compiler's Node code runs from, beside its packages.

In a checkout, `npm ci` (make setup) fills node_modules beside checker.js, and that folder is the home.
An installed package (a wheel in site-packages) carries the Node code and its lock file but no
node_modules: `botgrpo setup react` copies the code and installs the locked packages into
$BOTGRPO_CACHE/node/react-<hash of the code>, and the services run from there. The code and its
packages stay in one folder because Node and TypeScript find packages by walking up from the code
(and host_files.js confines TypeScript's reads to that folder's node_modules). A new botgrpo version
with other Node code gets a new folder, so a stale install is never used.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from botgrpo_base.cache import cache_root

PACKAGE = Path(__file__).resolve().parent
SETUP_COMMAND = "botgrpo setup react"
INSTALLED = ".botgrpo-installed"  # written last by the setup, so a half-done install is never taken
REQUIRED = ("esbuild", "typescript", "@types/react", "react", "react-dom")


def node_files() -> list[Path]:
    """What the Node side needs beside its packages: the code and the locked package list."""
    return sorted([*PACKAGE.glob("*.js"), PACKAGE / "package.json", PACKAGE / "package-lock.json"])


def cache_home() -> Path:
    """Where `botgrpo setup react` installs for this exact Node code."""
    digest = hashlib.sha256()
    for path in node_files():
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return cache_root() / "node" / f"react-{digest.hexdigest()[:16]}"


def node_home() -> Path:
    """The package folder when its own node_modules is there (a checkout), else the cache folder."""
    return PACKAGE if (PACKAGE / "node_modules").is_dir() else cache_home()


def missing(home: Path) -> str | None:
    """None when `home` has every package the services load; else one line saying what to run."""
    if home != PACKAGE and not (home / INSTALLED).is_file():
        return f"the React and render services' Node packages are not installed; run `{SETUP_COMMAND}`"
    for pkg in REQUIRED:
        if not (home / "node_modules" / pkg).is_dir():
            fix = f"run `npm ci` in {home}" if home == PACKAGE else f"run `{SETUP_COMMAND}`"
            return f"{home / 'node_modules'} lacks {pkg}; {fix}"
    return None
