"""A Llama-class decoder (Llama, Qwen2, Qwen3, Mistral without a sliding window) run through its own
modules one layer at a time, for the two places that need the attention's keys and values by hand:
the lean decode loop (rollout/fast.py: a preallocated cache) and the shared-prompt training forward
(trainer/shared_prompt.py: a group's prompt run once). Calling the model's modules, never copies of
its weights, keeps LoRA adapters and the trainer's current weights in play.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

SUPPORTED = ("llama", "qwen2", "qwen3", "mistral")


def base_of(model: Any) -> Any:
    """The transformers model under a peft wrapper (or the model itself)."""
    return model.get_base_model() if hasattr(model, "get_base_model") else model


def unsupported_reason(model: Any) -> str | None:
    """Why the layers cannot be run by hand for this model (None when they can)."""
    cfg = base_of(model).config
    if cfg.model_type not in SUPPORTED:
        return f"model type {cfg.model_type!r} is not one of {', '.join(SUPPORTED)}"
    if getattr(cfg, "use_sliding_window", False) or "sliding_attention" in (getattr(cfg, "layer_types", None) or ()):
        return "sliding-window attention"
    if cfg.model_type == "mistral" and getattr(cfg, "sliding_window", None):
        return "sliding-window attention"
    body = getattr(base_of(model), "model", None)
    if body is None or not all(hasattr(body, n) for n in ("embed_tokens", "layers", "norm", "rotary_emb")):
        return "the decoder does not have the usual embed_tokens / layers / norm / rotary_emb layout"
    return None


def rope_moving_with_length(body: Any) -> str | None:
    """The rope type when its frequencies change with the sequence length (dynamic, longrope): then
    positions cannot be computed apart from the call that sees the whole sequence. Else None."""
    kind = str(getattr(body.rotary_emb, "rope_type", "default"))
    return kind if "dynamic" in kind or kind == "longrope" else None


def query_key_value(layer: Any, h: torch.Tensor, cos: torch.Tensor,
                    sin: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One layer's q, k, v for hidden states h (b, t, hidden): (b, heads, t, d), rotary applied to q and k."""
    a = layer.self_attn
    b, t = h.shape[:2]
    x = layer.input_layernorm(h)
    shape = (b, t, -1, a.head_dim)
    q, k, v = a.q_proj(x).view(shape), a.k_proj(x).view(shape), a.v_proj(x).view(shape)
    if hasattr(a, "q_norm"):  # Qwen3 normalises q and k per head before rotary
        q, k = a.q_norm(q), a.k_norm(k)
    q, k = apply_rotary_pos_emb(q.transpose(1, 2), k.transpose(1, 2), cos, sin)
    return q, k, v.transpose(1, 2)


def attend_and_feed_forward(layer: Any, h: torch.Tensor, q: torch.Tensor, keys: torch.Tensor, values: torch.Tensor,
                            mask: torch.Tensor) -> torch.Tensor:
    """The rest of the layer: attention of q over keys/values (grouped-query heads shared), output
    projection and residual, then the MLP block and its residual -> new hidden states (b, t, hidden)."""
    a = layer.self_attn
    b, t = h.shape[:2]
    o = F.scaled_dot_product_attention(q, keys, values, attn_mask=mask, scale=a.scaling, enable_gqa=True)
    h = h + a.o_proj(o.transpose(1, 2).reshape(b, t, -1))
    return h + layer.mlp(layer.post_attention_layernorm(h))


def causal_mask(keys_ok: torch.Tensor, first: int, end: int) -> torch.Tensor:
    """(b, 1, end - first, end) for queries at columns first .. end-1 over key columns 0 .. end-1:
    a query sees real keys (keys_ok (b, >= end)) at or before its column; a padding query also sees
    itself, so no row of the softmax is all -inf (no NaN)."""
    cols = torch.arange(end, device=keys_ok.device)
    rows = torch.arange(first, end, device=keys_ok.device)[:, None]
    return (keys_ok[:, None, None, :end] & (cols <= rows)) | (cols == rows)
