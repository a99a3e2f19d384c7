"""What `--model` names: a hub id, a model folder, a .gguf file, one checkpoint of `botgrpo train`, or a whole
run directory (every checkpoint, in step order). Loading goes through models/loading.py, as training's does."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from botgrpo_cli import rundir
from botgrpo_cli.errors import UserError

WEIGHTS = ("config.json", "adapter_config.json")  # a full model or a LoRA adapter


@dataclass(frozen=True)
class Target:
    label: str  # "model", "step-000020", or the --against model's "against"
    path: str  # a model folder or a hub id
    step: int | None = None  # training step, for checkpoints


def _is_model_dir(path: Path) -> bool:
    return any((path / name).is_file() for name in WEIGHTS)


def _checkpoint(ckpt: Path) -> Target:
    step = rundir.checkpoint_step(ckpt)
    state = ckpt / "state.json"
    if step is None and state.is_file():  # a checkpoint folder someone renamed
        step = json.loads(state.read_text())["step"]
    return Target(label=ckpt.name, path=str(ckpt / "model"), step=None if step is None else int(step))


def _looks_local(name: str) -> bool:
    """Paths, not hub ids ("owner/name" or "name"): start with . / ~, or have more than one '/'."""
    return name.startswith((".", "/", "~")) or (os.sep in name and name.count("/") != 1)


def resolve(name: str, label: str = "model") -> list[Target]:
    """The models to evaluate for one `--model` value (several for a run directory); a .gguf file
    is dequantised (float32) into a cached model folder first."""
    from botgrpo_cli.models.gguf import is_gguf, resolve_gguf

    path = Path(name).expanduser()
    if is_gguf(name):
        return [Target(label, resolve_gguf(name, "float32"))]
    if path.is_dir():
        if _is_model_dir(path):
            return [Target(label, str(path))]
        if _is_model_dir(path / "model"):
            return [_checkpoint(path)]
        ckpts = [p for p in rundir.checkpoint_dirs(path) if _is_model_dir(p / "model")]
        if ckpts:
            return [_checkpoint(p) for p in ckpts]
        if (path / rundir.METRICS).is_file() or (path / rundir.CHECKPOINTS).is_dir():
            raise UserError(f"run directory {path} has no checkpoints to evaluate; train with run.save_every > 0 "
                            "or until the last step (it is always saved)")
        raise UserError(f"{path} is not a model folder (no config.json), a checkpoint or a run directory; "
                        "give one of those or a Hugging Face hub id")
    if path.exists() or _looks_local(name):
        raise UserError(f"model path {name} does not exist; give a model folder, a checkpoint or run directory "
                        "of `botgrpo train`, or a hub id")
    return [Target(label, name)]


def load(target: Target) -> tuple[Any, Any]:
    """(model in eval mode, tokenizer) for a target; a LoRA adapter is loaded onto its base model."""
    from botgrpo_cli.config import ModelConfig
    from botgrpo_cli.models.loading import adapter_base, frozen, is_adapter, load_adapter, load_pretrained, load_tokenizer

    tok = load_tokenizer(target.path)  # first: it also quiets transformers' progress bars
    dtype = ModelConfig().dtype
    if not is_adapter(target.path):
        return frozen(load_pretrained(target.path, dtype)), tok
    return load_adapter(frozen(load_pretrained(adapter_base(target.path), dtype)), target.path, trainable=False), tok
