"""Package discovery for the import roots, each in a folder of another name (pyproject.toml
holds everything else). Every package under a root ships, found by its __init__.py, never listed by
hand; every other file beside a package's modules ships as its data (the Node code, the lock file,
the task data, the protocol document), except build and install leftovers (node_modules, __pycache__)."""

from __future__ import annotations

import os

from setuptools import find_packages, setup

ROOTS = {"botgrpo_base": "botgrpo_base", "botgrpo_cli": "botgrpo_cli", "botgrpo_rewards": "rewards",
         "botgrpo_tasks": "tasks"}
NOT_SHIPPED_DIRS = {"node_modules", "__pycache__"}
NOT_SHIPPED_SUFFIXES = (".py", ".pyc", ".pyo")


def packages() -> list[str]:
    found = []
    for name, folder in ROOTS.items():
        found += [name, *(f"{name}.{sub}" for sub in find_packages(folder))]
    return found


def package_data(names: list[str]) -> dict[str, list[str]]:
    """Each non-Python file, as a path relative to the nearest package folder above it."""
    folders = {os.path.join(ROOTS[n.split(".")[0]], *n.split(".")[1:]): n for n in names}
    data: dict[str, list[str]] = {}
    for root in ROOTS.values():
        for here, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d not in NOT_SHIPPED_DIRS and not os.path.islink(os.path.join(here, d)))
            owner = here
            while owner not in folders:
                owner = os.path.dirname(owner)
            for f in files:
                if not f.endswith(NOT_SHIPPED_SUFFIXES):
                    data.setdefault(folders[owner], []).append(os.path.relpath(os.path.join(here, f), owner))
    return data


PACKAGES = packages()
setup(packages=PACKAGES, package_dir=ROOTS, package_data=package_data(PACKAGES))
