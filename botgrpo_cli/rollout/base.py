"""The engine interface and the batch it returns (docs/INTERFACES.md, rollout)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import torch
from torch import Tensor


@dataclass(frozen=True)
class SamplingParams:
    max_new_tokens: int = 64
    temperature: float = 1.0
    top_p: float = 1.0
    stop: tuple[str, ...] = ()  # generation ends after any of these strings (kept in the text)
    seed: int = 0  # fixes the sampled tokens: same seed, prompts and weights -> same batch
    thinking_budget: int | None = None  # at most this many tokens inside the thinking block, then its close is forced
    think_tags: tuple[str, str] | None = None  # the thinking block's [open, close] (the task's think_tags)


@dataclass
class RolloutBatch:
    """B = len(prompts) * n completions, padded on the right to T generated tokens."""

    prompt_ids: list[list[int]]  # (B,) token ids of each row's prompt (no padding)
    completion_ids: Tensor  # (B, T) long; padding = pad id
    mask: Tensor  # (B, T) bool; True on generated tokens incl. EOS
    texts: list[str]  # (B,) completion text, cut after a stop string
    offsets: list[list[tuple[int, int]]]  # per valid token: code points [start, end) in texts[i]
    group_ids: Tensor  # (B,) long; rows sampled from the same prompt share an id
    finished: Tensor  # (B,) bool; ended by EOS or a stop string (not the length limit)
    logp_old: Tensor | None = None  # (B, T) behaviour log-probs when the engine has them
    prompts: list[str] = field(default_factory=list)  # (B,) prompt text of each row

    @property
    def lengths(self) -> Tensor:
        return self.mask.sum(1)  # (B,)

    def select(self, rows: Tensor) -> "RolloutBatch":
        """The sub-batch of `rows` (long indices), keeping group ids."""
        idx = rows.tolist()
        return RolloutBatch(
            prompt_ids=[self.prompt_ids[i] for i in idx], completion_ids=self.completion_ids[rows],
            mask=self.mask[rows], texts=[self.texts[i] for i in idx], offsets=[self.offsets[i] for i in idx],
            group_ids=self.group_ids[rows], finished=self.finished[rows],
            logp_old=None if self.logp_old is None else self.logp_old[rows],
            prompts=[self.prompts[i] for i in idx])


def concat(batches: list[RolloutBatch], pad_id: int) -> RolloutBatch:
    """Stack batches (padding to the widest T); group ids are kept as they are."""
    width = max(b.completion_ids.shape[1] for b in batches)

    def pad(x: Tensor, value) -> Tensor:
        return torch.nn.functional.pad(x, (0, width - x.shape[1]), value=value)

    logps = [b.logp_old for b in batches]
    return RolloutBatch(
        prompt_ids=[p for b in batches for p in b.prompt_ids],
        completion_ids=torch.cat([pad(b.completion_ids, pad_id) for b in batches]),
        mask=torch.cat([pad(b.mask, False) for b in batches]),
        texts=[t for b in batches for t in b.texts], offsets=[o for b in batches for o in b.offsets],
        group_ids=torch.cat([b.group_ids for b in batches]), finished=torch.cat([b.finished for b in batches]),
        logp_old=None if any(x is None for x in logps) else torch.cat([pad(x, 0.0) for x in logps]),
        prompts=[p for b in batches for p in b.prompts])


class Engine(Protocol):
    """Samples n completions per prompt. Implementations: HFEngine (CPU default)."""

    def generate(self, prompts: list[str], n: int, params: SamplingParams) -> RolloutBatch: ...

    def sync_weights(self) -> None:
        """Pick up the trainer's current weights (no-op when the engine shares the model)."""
        ...
