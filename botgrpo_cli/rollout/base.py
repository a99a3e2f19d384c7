"""The engine interface and the batch it returns (docs/INTERFACES.md, rollout)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Protocol

import torch
from torch import Tensor

from botgrpo_cli.errors import UserError
from botgrpo_cli.rollout.offsets import OffsetDecoder, cut_at_stop, truncate

if TYPE_CHECKING:  # the config is read, never imported at run time
    from botgrpo_cli.config import RolloutConfig

OnDone = Callable[[int, str], None]  # (row, final text): called once per row the moment it ends
Prompts = list[str] | list[list[int]]  # prompt texts (templated), or their token ids (used as they are)
Turns = list[list[tuple[int, int]]]  # per row: [start, end) token columns of each model turn


@dataclass(frozen=True)
class SamplingParams:
    max_new_tokens: int = 64
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0  # keep the k most likely tokens; 0 = all (names and meanings as vLLM's SamplingParams)
    min_p: float = 0.0  # drop tokens less likely than min_p times the most likely one; 0 = off
    repetition_penalty: float = 1.0  # > 1 discourages tokens already in the prompt or completion; 1 = off
    stop: tuple[str, ...] = ()  # generation ends after any of these strings (kept in the text)
    seed: int = 0  # fixes the sampled tokens: same seed, prompts and weights -> same batch
    thinking_budget: int | None = None  # at most this many tokens inside the thinking block, then its close is forced
    think_tags: tuple[str, str] | None = None  # the thinking block's [open, close] (the task's think_tags)

    @classmethod
    def from_config(cls, rollout: RolloutConfig, task: Any, seed: int = 0) -> "SamplingParams":
        """The one translation of the rollout settings into sampling parameters (training, `botgrpo
        eval`, the benches): a setting left unset takes the task's (length, stop strings), and the
        thinking budget the task's tags."""
        return cls(max_new_tokens=rollout.max_new_tokens or task.max_new_tokens, temperature=rollout.temperature,
                   top_p=rollout.top_p, top_k=rollout.top_k, min_p=rollout.min_p,
                   repetition_penalty=rollout.repetition_penalty,
                   stop=tuple(task.stop if rollout.stop is None else rollout.stop), seed=seed,
                   thinking_budget=rollout.thinking_budget, think_tags=task.think_tags)


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
    # Multi-turn rollouts (rollout/turns.py): the completion is the whole transcript after the first
    # prompt, tool and environment messages included. loss_mask (B, T) bool marks the tokens the
    # model generated, the only ones trained on (None: every generated token, i.e. == mask); turns
    # gives each row's model turns as token column ranges (None: one turn, the completion).
    loss_mask: Tensor | None = None
    turns: Turns | None = None
    # optimizer steps the sampling weights had taken (the trainer's step count when they were pushed
    # to the engine): a batch trained at step n is (n - 1) - policy_version steps off-policy
    policy_version: int = 0
    # (B,) each row's environment instance (run.environment; None without one): TRL's reward
    # functions read the instances' state (reward_client/functions.py, `environments`)
    environments: list | None = None

    @property
    def lengths(self) -> Tensor:
        return self.mask.sum(1)  # (B,)

    @property
    def trained(self) -> Tensor:
        """(B, T) bool: the tokens the loss and the advantages see (the model's own)."""
        return self.mask if self.loss_mask is None else self.loss_mask & self.mask

    def select(self, rows: Tensor) -> "RolloutBatch":
        """The sub-batch of `rows` (long indices), keeping group ids."""
        idx = rows.tolist()
        return RolloutBatch(
            prompt_ids=[self.prompt_ids[i] for i in idx], completion_ids=self.completion_ids[rows],
            mask=self.mask[rows], texts=[self.texts[i] for i in idx], offsets=[self.offsets[i] for i in idx],
            group_ids=self.group_ids[rows], finished=self.finished[rows],
            logp_old=None if self.logp_old is None else self.logp_old[rows],
            prompts=[self.prompts[i] for i in idx],
            loss_mask=None if self.loss_mask is None else self.loss_mask[rows],
            turns=None if self.turns is None else [self.turns[i] for i in idx], policy_version=self.policy_version,
            environments=None if self.environments is None else [self.environments[i] for i in idx])


def concat(batches: list[RolloutBatch], pad_id: int) -> RolloutBatch:
    """Stack batches (padding to the widest T); group ids are kept as they are."""
    width = max(b.completion_ids.shape[1] for b in batches)

    def pad(x: Tensor, value) -> Tensor:
        return torch.nn.functional.pad(x, (0, width - x.shape[1]), value=value)

    logps = [b.logp_old for b in batches]
    multi = any(b.loss_mask is not None or b.turns is not None for b in batches)
    return RolloutBatch(
        prompt_ids=[p for b in batches for p in b.prompt_ids],
        completion_ids=torch.cat([pad(b.completion_ids, pad_id) for b in batches]),
        mask=torch.cat([pad(b.mask, False) for b in batches]),
        texts=[t for b in batches for t in b.texts], offsets=[o for b in batches for o in b.offsets],
        group_ids=torch.cat([b.group_ids for b in batches]), finished=torch.cat([b.finished for b in batches]),
        logp_old=None if any(x is None for x in logps) else torch.cat([pad(x, 0.0) for x in logps]),
        prompts=[p for b in batches for p in b.prompts],
        loss_mask=torch.cat([pad(b.trained, False) for b in batches]) if multi else None,
        turns=[t for b in batches for t in whole_turns(b)] if multi else None,
        policy_version=min(b.policy_version for b in batches),  # the oldest weights bound the staleness
        environments=None if all(b.environments is None for b in batches) else
        [e for b in batches for e in (b.environments or [None] * len(b.texts))])


def whole_turns(batch: RolloutBatch) -> Turns:
    """The batch's turns, a single-turn batch's being one turn over each row's completion."""
    if batch.turns is not None:
        return batch.turns
    return [[(0, n)] if n else [] for n in batch.lengths.tolist()]


def prompt_ids_of(tokenizer: Any, prompts: Prompts) -> list[list[int]]:
    """Token ids of each prompt: ids pass through untouched (a multi-turn prefix must keep the very
    tokens sampled; re-tokenising its text could merge them differently); texts arrive fully
    formatted (chat template included), so no special tokens are added, as TRL does."""
    if is_token_prompts(prompts):
        return [list(p) for p in prompts]
    return tokenizer(list(prompts), add_special_tokens=False)["input_ids"]


def is_token_prompts(prompts: Prompts) -> bool:
    """True when the prompts are token id lists (each one a list of ints), False for texts."""
    if not prompts:
        return False
    if all(isinstance(p, str) for p in prompts):
        return False
    if all(isinstance(p, (list, tuple)) and all(isinstance(t, int) for t in p) for p in prompts):
        return True
    raise TypeError("prompts must all be strings or all be lists of token ids")


def prompt_texts_of(tokenizer: Any, prompts: Prompts) -> list[str]:
    """The prompts as text (token ids decoded with their special tokens) for the batch's record."""
    if not is_token_prompts(prompts):
        return list(prompts)
    return tokenizer.batch_decode([list(p) for p in prompts], skip_special_tokens=False)


class Engine(Protocol):
    """Samples n completions per prompt. Implementations: FastEngine (CPU default), HFEngine, VLLMEngine (GPU).
    Both finish rows with `finish_row` and pick EOS and padding with `eos_ids` / `pad_id_of`, so
    they hand the trainer identical batches for identical tokens."""

    pad_id: int  # the id padding completion_ids (and prompts in the trainer's forward pass)

    def generate(self, prompts: Prompts, n: int, params: SamplingParams,
                 on_done: OnDone | None = None) -> RolloutBatch:
        """n completions of each prompt; rows i*n .. i*n+n-1 belong to prompt i (group id i).
        prompts are texts (templated, tokenised without special tokens) or token id lists, which the
        engine feeds as they are, never re-tokenising (multi-turn continuations: rollout/turns.py).
        on_done(row, text) is called once per row ended by EOS or a stop string, with the text the
        batch will hold (rows cut by the length limit are not reported)."""
        ...

    def sync_weights(self) -> None:
        """Pick up the trainer's current weights (no-op when the engine shares the model)."""
        ...


def eos_ids(model: Any, tokenizer: Any) -> list[int]:
    """Token ids that end a completion: the model's generation config's, plus the tokenizer's."""
    eos = getattr(model.generation_config, "eos_token_id", None)
    ids = list(eos) if isinstance(eos, list) else [eos] if eos is not None else []
    if tokenizer.eos_token_id is not None and tokenizer.eos_token_id not in ids:
        ids.append(tokenizer.eos_token_id)
    if not ids:
        raise ValueError("the model and tokenizer define no EOS token; set tokenizer.eos_token")
    return ids


def context_limit(model: Any, tokenizer: Any) -> int | None:
    """Tokens the model can attend over: its position limit, or the tokenizer's when that is a real
    number (GGUF and some hub tokenizers say 1e30); None when neither says."""
    config = getattr(model, "config", None)
    limits = [getattr(config, name, None) for name in ("max_position_embeddings", "n_positions", "max_sequence_length")]
    limits.append(getattr(tokenizer, "model_max_length", None))
    real = [int(x) for x in limits if isinstance(x, (int, float)) and 0 < x < 10**7]
    return min(real) if real else None


def check_context(prompt_tokens: int, max_new_tokens: int, limit: int | None) -> str | None:
    """A prompt that does not fit the model's context is an error (past it positions are garbage or an
    index error); a generation budget that would run past it is returned as a warning to show once."""
    if limit is None:
        return None
    if prompt_tokens >= limit:
        raise UserError(f"a prompt of {prompt_tokens} tokens does not fit the model's context of {limit} tokens "
                        f"(room is needed for at least one new token); shorten the prompt or use a model with "
                        f"a longer context")
    if prompt_tokens + max_new_tokens > limit:
        return (f"a prompt of {prompt_tokens} tokens plus max_new_tokens {max_new_tokens} runs past the model's "
                f"context of {limit} tokens: completions that long are unreliable; lower the generation limit "
                f"(rollout.max_new_tokens, eval --max-new-tokens) to at most {limit - prompt_tokens}")
    return None


def pad_id_of(tokenizer: Any, eos: list[int]) -> int:
    """The tokenizer's pad id, else the first EOS id."""
    return tokenizer.pad_token_id if tokenizer.pad_token_id is not None else eos[0]


def finish_row(decoder: OffsetDecoder, eos: list[int], generated: list[int],
               stops: tuple[str, ...]) -> tuple[list[int], str, list[tuple[int, int]], bool]:
    """Valid tokens (through the first EOS or stop string), text, code-point offsets, finished."""
    eos_at = next((k for k, t in enumerate(generated) if t in eos), None)
    tokens = generated if eos_at is None else generated[: eos_at + 1]
    text, offsets = decoder.decode(tokens)
    cut = cut_at_stop(text, stops)
    if cut is not None:
        text, offsets = truncate(text, offsets, cut)
        tokens = tokens[: len(offsets)]
    return tokens, text, offsets, eos_at is not None or cut is not None
