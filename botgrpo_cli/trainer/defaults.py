"""Defaults that depend on the model: the learning rate (by origin and size) and the micro-batch
(by the memory one forward/backward takes). Left unset in the config, they are resolved here once
per run and written into the run's config.yaml, so a run says what it used.

Learning rate: the rule in botgrpo_cli/learning_rate.py; a model is bootstrapped when its folder
holds bootstrap.json.

Micro-batch: rows per forward/backward so that one micro-batch's activations fit
`optim.micro_batch_memory_gb`, from the estimate in `activation_bytes`, at most 64. The budget binds
for real models (3 rows for SmolLM2-135M); the cap only stops tiny models at a size where one more
forward costs only its per-operation overhead (on the tiny arith_synth model, 16 rows took 0.72 s
of CPU a step and 64 rows 0.62 s: its 64-row batch now trains in one forward/backward, as TRL's does).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from botgrpo_cli.bootstrap.cache import INFO_FILE
from botgrpo_cli.config import Config
from botgrpo_cli.learning_rate import default_lr

__all__ = ["activation_bytes", "auto_micro_batch", "default_lr", "is_bootstrapped", "model_dims", "resolve"]
from botgrpo_cli.console import console

MAX_AUTO_MICRO_BATCH = 64
PROMPTS_MEASURED = 256  # train prompts tokenised to find the longest prompt


def is_bootstrapped(path: str) -> bool:
    return (Path(path) / INFO_FILE).is_file()


def activation_bytes(seq_len: int, completion_len: int, dims: dict[str, int], checkpointing: bool,
                     param_bytes: int) -> int:
    """Memory one row of a training micro-batch keeps for backward, estimated.

    Logits path: the completion's logits, their float32 copy, log-softmax and its gradient (and the
    entropy's exp): about 5 float32 (T, V) tensors. Each decoder layer keeps about 8 hidden-wide and
    4 MLP-wide vectors per token (norms, q/k/v, attention output, gate, up, activation, product);
    with gradient checkpointing only its input (one hidden-wide vector) and one layer's worth."""
    hidden, n_layers = dims["hidden"], dims["layers"]
    layer = (8 * hidden + 4 * dims["intermediate"]) * param_bytes  # per token
    per_token = layer + n_layers * hidden * param_bytes if checkpointing else n_layers * layer
    return seq_len * per_token + 5 * completion_len * dims["vocab"] * 4


def model_dims(model: Any) -> dict[str, int]:
    c = getattr(model, "config", None)
    c = getattr(c, "text_config", None) or c
    hidden = int(getattr(c, "hidden_size", 0) or getattr(c, "n_embd", 0) or 1024)
    return {"hidden": hidden, "intermediate": int(getattr(c, "intermediate_size", 0) or 4 * hidden),
            "layers": int(getattr(c, "num_hidden_layers", 0) or getattr(c, "n_layer", 0) or 1),
            "vocab": int(getattr(c, "vocab_size", 0) or 1)}


def auto_micro_batch(seq_len: int, completion_len: int, dims: dict[str, int], checkpointing: bool,
                     param_bytes: int, budget_gb: float) -> int:
    per_row = activation_bytes(seq_len, completion_len, dims, checkpointing, param_bytes)
    return max(1, min(MAX_AUTO_MICRO_BATCH, int(budget_gb * 2**30 // per_row)))


def longest_prompt(session_prompts: list[str], tok: Any) -> int:
    if not session_prompts:
        return 0
    ids = tok(session_prompts, add_special_tokens=False)["input_ids"]
    return max(len(x) for x in ids)


def resolve(cfg: Config, model: Any, tok: Any, base_path: str, prompts: list[str], max_new_tokens: int) -> None:
    """Fill optim.lr and optim.micro_batch_size when unset (in place) and say what was chosen."""
    o = cfg.optim
    chosen = []
    if o.lr is None:
        n_params = sum(p.numel() for p in model.parameters())
        o.lr = default_lr(n_params, is_bootstrapped(base_path), cfg.model.lora_r > 0)
        origin = "tiny bootstrapped model" if is_bootstrapped(base_path) else \
            f"pretrained, {n_params / 1e6:.0f}M parameters{', LoRA' if cfg.model.lora_r > 0 else ''}"
        chosen.append(f"optim.lr={o.lr:g} ({origin})")
    if o.micro_batch_size is None:
        seq = longest_prompt(prompts[:PROMPTS_MEASURED], tok) + max_new_tokens
        param_bytes = next(model.parameters()).element_size()
        o.micro_batch_size = auto_micro_batch(seq, max_new_tokens, model_dims(model), cfg.model.gradient_checkpointing,
                                              param_bytes, o.micro_batch_memory_gb)
        chosen.append(f"optim.micro_batch_size={o.micro_batch_size} ({seq} tokens a row, "
                      f"{o.micro_batch_memory_gb:g} GB for activations)")
    if chosen:
        console.print("defaults for this model: " + "; ".join(chosen) + " (set them to override)")
