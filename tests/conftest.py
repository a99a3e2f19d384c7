"""Shared test fixtures.

The bootstrapped tiny models are built once per cache (`<repo>/.cache/botgrpo`) and shared by
every test in the suite: request `tiny_model_dir` (react_synth) or `tiny_arith_model_dir`.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TEST_CACHE = ROOT / ".cache" / "botgrpo"


@pytest.fixture(scope="session")
def botgrpo_cache() -> Path:
    os.environ.setdefault("BOTGRPO_CACHE", str(TEST_CACHE))
    return Path(os.environ["BOTGRPO_CACHE"])


@pytest.fixture(scope="session")
def tiny_model(botgrpo_cache):
    """A factory: tiny_model("react_synth") -> the cached bootstrapped model directory."""
    from botgrpo_cli.bootstrap import bootstrap

    built: dict[str, Path] = {}

    def get(task: str) -> Path:
        if task not in built:
            built[task] = bootstrap(task)
        return built[task]

    return get


@pytest.fixture(scope="session")
def tiny_model_dir(tiny_model) -> Path:
    return tiny_model("react_synth")


@pytest.fixture(scope="session")
def tiny_arith_model_dir(tiny_model) -> Path:
    return tiny_model("arith_synth")


@pytest.fixture(scope="module")
def react_backend():
    """A started in-process react backend (real Node checker), closed after the module."""
    from botgrpo_rewards.react.service import ReactBackend

    backend = ReactBackend()
    backend.start()
    yield backend
    backend.close()
