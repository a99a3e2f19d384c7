"""The supervised warm start: next-token loss on completion tokens only."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
from transformers import PreTrainedModel, PreTrainedTokenizerFast


@dataclass(frozen=True)
class SftConfig:
    steps: int = 300
    batch_size: int = 32
    lr: float = 3e-3
    warmup: int = 20
    weight_decay: float = 0.01


def encode_pairs(tokenizer: PreTrainedTokenizerFast, pairs: list[tuple[str, str]]) -> list[tuple[list[int], int]]:
    """(ids, prompt length) per pair. Prompt and completion are encoded separately, as at rollout
    time (the trainer encodes the prompt and samples the rest), and the completion ends with EOS."""
    prompts = tokenizer([p for p, _ in pairs], add_special_tokens=False)["input_ids"]
    completions = tokenizer([c for _, c in pairs], add_special_tokens=False)["input_ids"]
    return [(p + c + [tokenizer.eos_token_id], len(p)) for p, c in zip(prompts, completions)]


def collate(rows: list[tuple[list[int], int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Right-padded input ids, attention mask and labels (-100 on prompt and padding)."""
    width = max(len(ids) for ids, _ in rows)
    input_ids = torch.full((len(rows), width), pad_id, dtype=torch.long)  # (B, T)
    labels = torch.full((len(rows), width), -100, dtype=torch.long)  # (B, T)
    mask = torch.zeros((len(rows), width), dtype=torch.long)  # (B, T)
    for i, (ids, n_prompt) in enumerate(rows):
        input_ids[i, : len(ids)] = torch.tensor(ids)
        labels[i, n_prompt : len(ids)] = torch.tensor(ids[n_prompt:])
        mask[i, : len(ids)] = 1
    return input_ids, mask, labels


def train_sft(
    model: PreTrainedModel,
    rows: list[tuple[list[int], int]],
    pad_id: int,
    cfg: SftConfig,
    seed: int,
    on_step: Callable[[int, float], None] | None = None,
) -> float:
    """Train in place with AdamW and warmup + cosine decay; returns the mean loss of the last 20 steps."""
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay, betas=(0.9, 0.98))
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: _lr_factor(s, cfg))
    model.train()
    order = torch.randperm(len(rows), generator=gen)
    pos, recent = 0, []
    for step in range(cfg.steps):
        if pos + cfg.batch_size > len(rows):  # a new epoch, reshuffled
            order, pos = torch.randperm(len(rows), generator=gen), 0
        batch = [rows[int(j)] for j in order[pos : pos + cfg.batch_size]]
        pos += cfg.batch_size
        input_ids, mask, labels = collate(batch, pad_id)
        loss = model(input_ids=input_ids, attention_mask=mask, labels=labels).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        recent = (recent + [loss.item()])[-20:]
        if on_step is not None:
            on_step(step + 1, recent[-1])
    model.eval()
    return sum(recent) / max(1, len(recent))


def _lr_factor(step: int, cfg: SftConfig) -> float:
    if step < cfg.warmup:
        return (step + 1) / cfg.warmup
    progress = (step - cfg.warmup) / max(1, cfg.steps - cfg.warmup)
    return 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress))
