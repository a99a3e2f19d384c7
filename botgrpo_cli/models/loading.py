"""Loading a causal LM, its tokenizer and a LoRA adapter: the one way the trainer and evaluation do it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch

from botgrpo_cli.errors import UserError


def quiet_transformers() -> None:
    from transformers.utils import logging

    logging.disable_progress_bar()  # the CLI has its own progress display


def load_tokenizer(path: str) -> Any:
    from transformers import AutoTokenizer

    quiet_transformers()
    try:
        tok = AutoTokenizer.from_pretrained(path)
    except (OSError, ValueError) as err:
        raise UserError(f"cannot load a tokenizer from {path!r}: {err}") from None
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    return tok


def load_pretrained(path: str, dtype: str) -> Any:
    """A causal LM from a hub id or folder, in `dtype` (a torch dtype name), in train mode."""
    from transformers import AutoModelForCausalLM

    try:
        return AutoModelForCausalLM.from_pretrained(path, dtype=getattr(torch, dtype))
    except (OSError, ValueError) as err:
        raise UserError(f"cannot load model {path!r}: {err}. Give a local model directory or a hub id "
                        f"that is reachable (offline machines need a local path).") from None


def frozen(model: Any) -> Any:
    return model.eval().requires_grad_(False)


def is_adapter(path: str) -> bool:
    return (Path(path) / "adapter_config.json").is_file()


def adapter_base(path: str) -> str:
    """The base model a saved LoRA adapter was trained on (its base_model_name_or_path)."""
    base = json.loads((Path(path) / "adapter_config.json").read_text()).get("base_model_name_or_path")
    if not base:
        raise UserError(f"LoRA adapter {path} does not name its base model (base_model_name_or_path)")
    return base


def load_adapter(model: Any, path: str, trainable: bool) -> Any:
    """A saved LoRA adapter (checkpoint/model/) on `model`: trainable to resume, frozen to evaluate."""
    from peft import PeftModel

    adapted = PeftModel.from_pretrained(model, path, is_trainable=trainable)
    return adapted if trainable else frozen(adapted)


def thinking_mismatch(tok: Any, think_tags: tuple[str, str] | None, budget: int | None,
                      template_kwargs: dict | None) -> str | None:
    """A warning when thinking options are set for a model that cannot use them (its chat template
    knows no thinking tags, nor `enable_thinking`); None when they fit or none is set."""
    kwargs = template_kwargs or {}
    if budget is None and "enable_thinking" not in kwargs:
        return None
    template = getattr(tok, "chat_template", None) or ""
    template = template if isinstance(template, str) else " ".join(map(str, template.values()))
    asked = [f"rollout.thinking_budget={budget}"] if budget is not None else []
    asked += [f"enable_thinking={kwargs['enable_thinking']}"] if "enable_thinking" in kwargs else []
    has_tags = bool(think_tags) and (think_tags[0] in template or think_tags[0] in tok.get_vocab())
    if "enable_thinking" in kwargs and "enable_thinking" not in template:
        return (f"{' and '.join(asked)} do nothing here: this model's chat template has no enable_thinking switch"
                + ("" if has_tags else f" and no thinking tags ({think_tags[0] if think_tags else 'none set'})"))
    if budget is not None and not has_tags:
        return (f"rollout.thinking_budget={budget} does nothing here: neither this model's chat template nor its "
                f"vocabulary has the thinking tag {think_tags[0] if think_tags else '(task.think_tags is null)'}")
    return None
