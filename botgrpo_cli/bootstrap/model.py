"""Small Qwen2-style causal LMs (Qwen3 config: see tokenizer.py for why), sized for CPU."""

from __future__ import annotations

from transformers import Qwen3Config, Qwen3ForCausalLM

SIZES = {  # name -> architecture; "tiny" builds in well under a minute on two CPU cores
    "tiny": dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                 head_dim=16, intermediate_size=192),
    "small": dict(hidden_size=192, num_hidden_layers=4, num_attention_heads=6, num_key_value_heads=2,
                  head_dim=32, intermediate_size=512),
}


def make_model(size: str, vocab_size: int, eos_id: int, pad_id: int, max_positions: int = 512) -> Qwen3ForCausalLM:
    """A freshly initialised model with tied embeddings (the caller sets the seed)."""
    if size not in SIZES:
        raise KeyError(f"unknown model size {size!r}; known: {', '.join(SIZES)}")
    config = Qwen3Config(
        vocab_size=vocab_size,
        max_position_embeddings=max_positions,
        tie_word_embeddings=True,
        bos_token_id=eos_id,
        eos_token_id=eos_id,
        pad_token_id=pad_id,
        rope_theta=10000.0,
        **SIZES[size],
    )
    return Qwen3ForCausalLM(config)
