"""A decoder run through its own modules one layer at a time, for the two places that need the
attention's keys and values by hand: the lean decode loop (rollout/fast.py: a preallocated cache)
and the shared-prompt training forward (trainer/shared_prompt.py: a group's prompt run once).
Calling the model's modules, never copies of its weights, keeps LoRA adapters and the trainer's
current weights in play.

Llama-class decoders (Llama, Qwen2, Qwen3, Mistral without a sliding window) for both; Gemma 3's
text decoder (gemma3_text) for the decode loop. What Gemma 3 adds, as transformers 5.23's
modeling_gemma3 runs it: the embedding scaled by sqrt(hidden) and the (1 + w) RMSNorms (both inside
its modules), q/k norms, sliding-window layers beside global ones, each type with its own rope base
(`rope_of`, `window_of`), norms after the attention and around the MLP (`attend_and_feed_forward`),
and the final logit soft-cap (`final_logits`). Its attention logit soft-cap is not applied by that
attention (sdpa cannot; eager is not passed it), so a config setting one is left to HF generate.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

LLAMA_CLASS = ("llama", "qwen2", "qwen3", "mistral")
GEMMA3 = "gemma3_text"


def base_of(model: Any) -> Any:
    """The transformers model under a peft wrapper (or the model itself)."""
    return model.get_base_model() if hasattr(model, "get_base_model") else model


def unsupported_reason(model: Any, kinds: tuple[str, ...] = LLAMA_CLASS) -> str | None:
    """Why the layers cannot be run by hand for this model (None when they can); `kinds` are the
    model types the caller handles (gemma3_text needs per-layer ropes and windows: the decode loop)."""
    cfg = base_of(model).config
    if cfg.model_type not in kinds:
        return f"model type {cfg.model_type!r} is not one of {', '.join(kinds)}"
    if cfg.model_type == GEMMA3:
        if getattr(cfg, "use_bidirectional_attention", False):
            return "bidirectional attention"
        if getattr(cfg, "attn_logit_softcapping", None) is not None:
            return "attention logit soft-capping"
    elif getattr(cfg, "use_sliding_window", False) or "sliding_attention" in (getattr(cfg, "layer_types", None) or ()):
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
    kinds = getattr(body.rotary_emb, "rope_type", "default")  # Gemma 3: {layer type: rope type}
    for kind in (kinds.values() if isinstance(kinds, dict) else [kinds]):
        if "dynamic" in str(kind) or str(kind) == "longrope":
            return str(kind)
    return None


def rope_of(body: Any, layer: Any) -> str | None:
    """The layer type whose rope the layer uses where each type has its own (Gemma 3:
    sliding_attention | full_attention), or None where one rope serves every layer."""
    return layer.self_attn.layer_type if isinstance(getattr(body.rotary_emb, "rope_type", None), dict) else None


def window_of(layer: Any) -> int | None:
    """How many of the latest key columns (its own included) a query of this layer sees; None: all."""
    return getattr(layer.self_attn, "sliding_window", None)


def rotary(body: Any, h: torch.Tensor, pos: torch.Tensor, rope: str | None) -> tuple[torch.Tensor, torch.Tensor]:
    """cos, sin (b, t, d) for positions pos (b, t) of the rope of layer type `rope`."""
    return body.rotary_emb(h, pos) if rope is None else body.rotary_emb(h, pos, rope)


def final_logits(base: Any, h: torch.Tensor) -> torch.Tensor:
    """The model's logits from the last layer's hidden states: final norm, head, and the soft-cap
    cap * tanh(logits / cap) where the config sets one (Gemma 2/3's final_logit_softcapping)."""
    logits = base.lm_head(base.model.norm(h))
    cap = getattr(base.config, "final_logit_softcapping", None)
    return logits if cap is None else torch.tanh(logits / cap) * cap


def query_key_value(layer: Any, h: torch.Tensor, cos: torch.Tensor,
                    sin: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One layer's q, k, v for hidden states h (b, t, hidden): (b, heads, t, d), rotary applied to q and k."""
    a = layer.self_attn
    b, t = h.shape[:2]
    x = layer.input_layernorm(h)
    shape = (b, t, -1, a.head_dim)
    q, k, v = a.q_proj(x).view(shape), a.k_proj(x).view(shape), a.v_proj(x).view(shape)
    if hasattr(a, "q_norm"):  # Qwen3 and Gemma 3 normalise q and k per head before rotary
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
    o = a.o_proj(o.transpose(1, 2).reshape(b, t, -1))
    if hasattr(layer, "pre_feedforward_layernorm"):  # Gemma 3: each block's output normed before its residual
        h = h + layer.post_attention_layernorm(o)
        return h + layer.post_feedforward_layernorm(layer.mlp(layer.pre_feedforward_layernorm(h)))
    h = h + o
    return h + layer.mlp(layer.post_attention_layernorm(h))


def causal_mask(keys_ok: torch.Tensor, first: int, end: int, window: int | None = None) -> torch.Tensor:
    """(b, 1, end - first, end) for queries at columns first .. end-1 over key columns 0 .. end-1:
    a query sees real keys (keys_ok (b, >= end)) at or before its column (and, with a sliding
    `window`, fewer than `window` columns before it, as transformers' sliding mask counts cache
    columns); a padding query also sees itself, so no row of the softmax is all -inf (no NaN)."""
    cols = torch.arange(end, device=keys_ok.device)
    rows = torch.arange(first, end, device=keys_ok.device)[:, None]
    seen = cols <= rows if window is None else (cols <= rows) & (cols > rows - window)
    return (keys_ok[:, None, None, :end] & seen) | (cols == rows)
