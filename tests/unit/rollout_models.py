"""Tiny random decoders and a byte-level BPE tokenizer for the rollout engine tests."""

from __future__ import annotations

from typing import Any

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import (GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast,
                          Qwen2Config, Qwen2ForCausalLM, Qwen3Config, Qwen3ForCausalLM)

CORPUS = ["count the apples: 3 + 4 = 7", "déjà vu 😀 café", "x = y * 2; return x;"] * 20
PROMPTS = ["count the apples:", "x = y * 2; return x; and more words here", "😀"]


def tokenizer() -> Any:
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(CORPUS, trainers.BpeTrainer(vocab_size=300, special_tokens=["<eos>", "<pad>"],
                                                        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    return PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<eos>", pad_token="<pad>")


def model(kind: str, tok: Any, seed: int = 0) -> Any:
    """A random two-layer decoder of `kind` (qwen2 | qwen3 | llama | gpt2) in eval mode."""
    torch.manual_seed(seed)
    ids = dict(vocab_size=len(tok), eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
    if kind == "gpt2":
        return GPT2LMHeadModel(GPT2Config(n_embd=32, n_layer=2, n_head=2, n_positions=256, **ids)).eval()
    shape = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=2, max_position_embeddings=256, **ids)
    classes = {"qwen2": (Qwen2Config, Qwen2ForCausalLM), "qwen3": (Qwen3Config, Qwen3ForCausalLM),
               "llama": (LlamaConfig, LlamaForCausalLM)}
    config_cls, model_cls = classes[kind]
    return model_cls(config_cls(**shape)).eval()
