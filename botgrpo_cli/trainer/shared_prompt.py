"""The training forward with each group's prompt run once.

The G completions of a prompt share it, yet a plain forward runs the prompt G times, and a prompt
is often as long as its completions (a chat template, a task statement, a spec). Here a run of
consecutive rows with the same prompt runs it once: its keys and values at every layer are copied to
the run's rows, which attend over them and their own tokens. The copies are differentiable, so the
gradient through the prompt is the sum over the run's completions: the same as G separate prompts.
The logits equal the plain forward's up to float rounding (tests/unit/test_shared_prompt.py).

Used where it is exact and safe: a Llama-class decoder (decoder_layers.py), one process (a DDP or
FSDP wrapper must see its own forward), no gradient checkpointing, no attention dropout while
training, a rope whose frequencies do not move with the length, and at least one shared prompt.
"""

from __future__ import annotations

import itertools
from typing import Any

import torch
from torch import Tensor

from botgrpo_cli.decoder_layers import (attend_and_feed_forward, base_of, causal_mask, query_key_value,
                                        rope_moving_with_length, unsupported_reason)
from botgrpo_cli.trainer.distributed import is_fsdp
from botgrpo_cli.trainer.packing import pack


def runs_of_equal_prompts(prompt_ids: list[list[int]]) -> list[int]:
    """Lengths of the runs of consecutive rows holding the same prompt (they sum to the row count)."""
    runs: list[int] = []
    for k, p in enumerate(prompt_ids):
        if k and p == prompt_ids[k - 1]:
            runs[-1] += 1
        else:
            runs.append(1)
    return runs


def why_not_shared(model: Any) -> str | None:
    """Why the shared-prompt forward cannot stand in for the model's own (None when it can)."""
    if hasattr(model, "module") or is_fsdp(model):  # DDP's forward keeps the gradients in sync, FSDP2's
        return "the model is wrapped for distributed training"  # gathers each layer's shards first
    reason = unsupported_reason(model)
    if reason is not None:
        return reason
    base = base_of(model)
    named = "is_activation_checkpointing" if hasattr(type(base), "is_activation_checkpointing") else \
        "is_gradient_checkpointing"  # the newer name, where transformers has it
    if getattr(base, named, False):
        return "gradient checkpointing"
    if model.training and float(getattr(base.config, "attention_dropout", 0.0) or 0.0) > 0:
        return "attention dropout"
    kind = rope_moving_with_length(base.model)
    if kind is not None:
        return f"rope type {kind!r} changes with the sequence length"
    return None


def completion_logits(model: Any, prompt_ids: list[list[int]], completion_ids: Tensor, pad_id: int,
                      runs: list[int]) -> Tensor:
    """Logits predicting each completion token, (b, T, V): what the model's forward over
    [left-padded prompt][completion] gives at the last prompt position and the first T-1 completion
    positions, computed with each run of `runs` rows sharing one pass over its prompt."""
    base = base_of(model)
    body = base.model
    device = completion_ids.device
    counts = torch.tensor(runs, device=device)
    unique = [prompt_ids[s] for s in itertools.accumulate(runs[:-1], initial=0)]  # each run's first row
    prompts, attn, positions = (x.to(device) for x in pack(unique, torch.zeros((len(unique), 0), dtype=torch.long), pad_id))
    prompt_ok, width = attn.bool(), prompts.shape[1]
    h = body.embed_tokens(prompts)  # (u, P, hidden): one pass per distinct prompt
    cos, sin = body.rotary_emb(h, positions)
    mask = causal_mask(prompt_ok, 0, width)
    prefix = []
    for layer in body.layers:
        q, k, v = query_key_value(layer, h, cos, sin)
        prefix.append((k.repeat_interleave(counts, 0), v.repeat_interleave(counts, 0)))  # (b, kv heads, P, d)
        h = attend_and_feed_forward(layer, h, q, k, v, mask)
    last = h[:, -1:].repeat_interleave(counts, 0)  # (b, 1, hidden): predicts each completion's first token

    t = completion_ids.shape[1]
    first_pos = prompt_ok.sum(1).repeat_interleave(counts)  # (b,) a completion starts after its prompt
    hc = body.embed_tokens(completion_ids)  # (b, T, hidden)
    cos, sin = body.rotary_emb(hc, first_pos[:, None] + torch.arange(t, device=device))
    keys_ok = torch.cat([prompt_ok.repeat_interleave(counts, 0),
                         torch.ones((len(prompt_ids), t), dtype=torch.bool, device=device)], 1)  # (b, P + T)
    mask = causal_mask(keys_ok, width, width + t)  # (b, 1, T, P + T)
    for layer, (kp, vp) in zip(body.layers, prefix):
        q, k, v = query_key_value(layer, hc, cos, sin)
        hc = attend_and_feed_forward(layer, hc, q, torch.cat([kp, k], 2), torch.cat([vp, v], 2), mask)
    return base.lm_head(body.norm(torch.cat([last, hc[:, :-1]], 1)))
