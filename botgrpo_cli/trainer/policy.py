"""Load the policy (and a frozen reference) from a hub id or a local path; optional LoRA."""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from botgrpo_cli.config import ModelConfig
from botgrpo_cli.console import console
from botgrpo_cli.errors import UserError
from botgrpo_cli.models.gguf import is_gguf, resolve_gguf
from botgrpo_cli.models.loading import frozen, load_adapter, load_pretrained


def resolve_model_path(cfg: ModelConfig, task: str, task_options: dict[str, Any] | None = None) -> str:
    """The configured model, or the task's bootstrapped tiny model (built once, cached; a task
    variant, task_options, has its own); a GGUF file becomes a cached HF folder dequantised to
    cfg.dtype."""
    if cfg.name_or_path is None:
        from botgrpo_cli.bootstrap import bootstrap
        from botgrpo_tasks import get_task

        console.print(f"model: the bootstrapped tiny {task} model (built on first use, then cached)")
        return str(bootstrap(get_task(task, **(task_options or {}))))
    name = cfg.name_or_path
    if is_gguf(name):
        return resolve_gguf(name, cfg.dtype)
    looks_local = name.startswith((".", "/", "~")) or os.sep in name and name.count("/") != 1
    if looks_local or Path(name).expanduser().exists():
        path = Path(name).expanduser()
        if not (path / "config.json").is_file():
            raise UserError(f"model.name_or_path: {path} is not a model directory (no config.json there); "
                            f"give a directory saved with save_pretrained, a .gguf file, a hub id, or leave it "
                            f"unset for the task's tiny model")
        return str(path)
    check_hub_reachable(name)
    return name


_TRUE = ("1", "true", "yes", "on")


def check_hub_reachable(repo_id: str, timeout_s: float = 3.0) -> None:
    """A hub id needs the hub unless its files are cached: fail in a second, with one line, instead of
    spending minutes in download retries on an offline machine (HF_HUB_OFFLINE set, or no connection)."""
    from huggingface_hub import constants, try_to_load_from_cache

    cached = isinstance(try_to_load_from_cache(repo_id, "config.json"), str)
    offline = constants.HF_HUB_OFFLINE or os.environ.get("TRANSFORMERS_OFFLINE", "").lower() in _TRUE
    if not offline and not _proxied() and not _reachable(constants.ENDPOINT, timeout_s):
        if cached:  # use the cached files without asking the hub (its retries would take minutes)
            constants.HF_HUB_OFFLINE = True
            os.environ["HF_HUB_OFFLINE"] = "1"
            return
        offline = True
    if offline and not cached:
        raise UserError(f"model.name_or_path {repo_id!r} is a hub id, this machine is offline (HF_HUB_OFFLINE, or "
                        f"{constants.ENDPOINT} unreachable) and the model is not in the local hub cache; download "
                        "it where there is a network, or give a local directory or .gguf file")


def _proxied() -> bool:
    """With a proxy the hub may be reachable though its host is not: leave it to the hub client."""
    return any(os.environ.get(k) for k in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"))


def _reachable(endpoint: str, timeout_s: float) -> bool:
    import socket
    from urllib.parse import urlsplit

    url = urlsplit(endpoint)
    try:
        socket.create_connection((url.hostname or "", url.port or (443 if url.scheme == "https" else 80)),
                                 timeout=timeout_s).close()
    except OSError:
        return False
    return True


def load_model(path: str, cfg: ModelConfig, trainable: bool = True, adapter: str | None = None) -> Any:
    """A causal LM from `path`; LoRA-wrapped when cfg.lora_r > 0 (from `adapter` when resuming)."""
    model = load_pretrained(path, cfg.dtype)
    if not trainable:
        return frozen(model)
    if cfg.lora_r > 0:
        model = _with_lora(model, cfg, adapter)
    if cfg.disable_dropout:
        without_dropout(model)
    if cfg.gradient_checkpointing:
        model.gradient_checkpointing_enable()
        model.config.use_cache = False  # generate still passes use_cache=True explicitly
    return model


def without_dropout(model: Any) -> Any:
    """Every dropout layer (LoRA's too) drops nothing: the update's forward equals the no-grad ones."""
    import torch

    for module in model.modules():
        if isinstance(module, torch.nn.Dropout):
            module.p = 0.0
    return model


def _with_lora(model: Any, cfg: ModelConfig, adapter: str | None) -> Any:
    from peft import LoraConfig, get_peft_model

    if adapter is not None:
        return load_adapter(model, adapter, trainable=True)
    lora = LoraConfig(r=cfg.lora_r, lora_alpha=cfg.lora_alpha, lora_dropout=cfg.lora_dropout,
                      target_modules=list(cfg.lora_target_modules) or None, task_type="CAUSAL_LM")
    return get_peft_model(model, lora)


def loads_reference_copy(cfg: Any) -> bool:
    """A KL term needs the initial policy. A LoRA run already holds it: the base weights, which the
    adapters never change. Only a full fine-tune loads a second, frozen copy (its parameters again)."""
    return cfg.algo.beta > 0 and cfg.model.lora_r == 0


@contextmanager
def reference_policy(policy: Any, copy: Any) -> Iterator[Any]:
    """The reference model to run no-grad forwards with: the frozen `copy` when one was loaded, else
    the LoRA `policy` itself with its adapters switched off for the duration."""
    if copy is not None:
        yield copy
        return
    with policy.disable_adapter():
        yield policy
