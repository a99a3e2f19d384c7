"""`botgrpo setup react`: the React and render services' Node packages for an installed botgrpo.

A wheel cannot carry node_modules (platform binaries: esbuild, tsgo), so it carries the Node code
and package-lock.json, and this installs the locked packages with `npm ci` into the cache folder the
services look in (botgrpo_rewards.react.node_home says where and why the code goes with them).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from botgrpo_base.cache import atomic_dir, one_builder
from botgrpo_rewards.react.node_home import INSTALLED, PACKAGE, missing, node_files, node_home

# --prefer-offline: npm's cache answers when it holds the locked versions (a second install, CI after
# a warm-up), the registry otherwise; npm ci checks every package against the lock's hashes either way.
NPM_CI = ["ci", "--no-audit", "--no-fund", "--loglevel=error", "--prefer-offline"]


class NodeSetupError(RuntimeError):
    """npm is missing or `npm ci` failed: one line saying what to do (the CLI prints it)."""


def setup_react(force: bool = False) -> Path:
    """Install the Node packages (once per version of the Node code) and return the folder the
    services run their Node code from."""
    home = node_home()
    if home == PACKAGE or (missing(home) is None and not force):
        return home  # a checkout's own `npm ci`, or this version already set up
    npm = shutil.which("npm")
    if npm is None:
        raise NodeSetupError("npm was not found on PATH; install Node.js 20 with npm (e.g. apt-get install nodejs npm)")
    with one_builder(home):
        if missing(home) is None and not force:
            return home  # another process installed it while this one waited
        with atomic_dir(home) as tmp:
            for path in node_files():
                shutil.copy2(path, tmp / path.name)
            done = subprocess.run([npm, *NPM_CI], cwd=tmp, capture_output=True, text=True)
            if done.returncode != 0:
                said = (done.stderr.strip() or done.stdout.strip()).splitlines()
                raise NodeSetupError(f"`npm ci` failed in {tmp}: {said[-1] if said else f'exit {done.returncode}'}")
            (tmp / INSTALLED).touch()
    return home

