"""Rollouts with transformers' `generate`: batched sampling with a KV cache over left-padded prompts."""

from __future__ import annotations

from copy import deepcopy
from typing import Any, Callable

import torch
from transformers import GenerationConfig, LogitsProcessor, LogitsProcessorList, StoppingCriteria, StoppingCriteriaList

from botgrpo_cli.console import console
from botgrpo_cli.rollout.base import (Prompts, RolloutBatch, SamplingParams, check_context, context_limit, eos_ids,
                                      finish_row, pad_id_of, prompt_ids_of, prompt_texts_of)
from botgrpo_cli.rollout.offsets import OffsetDecoder
from botgrpo_cli.rollout.sampling import penalize_repeats, seen_tokens
from botgrpo_cli.rollout.thinking import thinking_budget


class _RowWatcher(StoppingCriteria):
    """Ends a row once its generated text (not the prompt) holds a stop string, and reports each row
    the moment it is done (EOS or stop), so callers can start scoring while other rows still grow."""

    def __init__(self, engine: "HFEngine", stops: tuple[str, ...], prompt_len: int,
                 on_done: Callable[[int, str], None] | None):
        self.engine, self.stops, self.prompt_len, self.on_done = engine, stops, prompt_len, on_done
        self.window = 4 * max((len(s) for s in stops), default=0) + 4  # tokens enough to hold any stop
        self.reported: set[int] = set()

    def __call__(self, input_ids: torch.Tensor, scores: Any, **kwargs: Any) -> torch.Tensor:
        done = torch.zeros(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)
        if self.stops:
            tail = input_ids[:, max(self.prompt_len, input_ids.shape[1] - self.window):]
            texts = self.engine.tok.batch_decode(tail, skip_special_tokens=True)
            done |= torch.tensor([any(s in t for s in self.stops) for t in texts], device=input_ids.device)
        if self.on_done is not None:
            ended = done | torch.isin(input_ids[:, -1], torch.tensor(self.engine.eos_ids, device=input_ids.device))
            for i in ended.nonzero().flatten().tolist():
                if i not in self.reported:
                    self.reported.add(i)
                    self.engine._report(i, input_ids[i, self.prompt_len:].tolist(), self.stops, self.on_done)
        return done


def left_padded(rows: list[list[int]], pad_id: int) -> dict[str, torch.Tensor]:
    """Token id rows -> input_ids and attention_mask (b, P), padded on the left as generate wants."""
    width = max(1, max((len(r) for r in rows), default=0))
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    attn = torch.zeros((len(rows), width), dtype=torch.long)
    for i, r in enumerate(rows):
        if r:
            ids[i, width - len(r):] = torch.tensor(r, dtype=torch.long)
            attn[i, width - len(r):] = 1
    return {"input_ids": ids, "attention_mask": attn}


class _RepeatPenalty(LogitsProcessor):
    """generate's repetition penalty over each row's own tokens: its prompt's left padding is not a token
    the row has seen (as in the lean loop). transformers versions differ there, so the engine applies it."""

    def __init__(self, penalty: float, prompt_valid: torch.Tensor):
        self.penalty, self.prompt_valid = penalty, prompt_valid.bool()  # (B, P)

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        valid = self.prompt_valid.to(input_ids.device)
        grown = valid.new_ones((input_ids.shape[0], input_ids.shape[1] - valid.shape[1]))
        seen = seen_tokens(input_ids, torch.cat([valid, grown], 1), scores.shape[-1])
        return penalize_repeats(scores, seen, self.penalty)


class HFEngine:
    """Samples from the trainer's own model object, so weights are always current; or, given `source`
    (the trainer's policy), from `model`, a copy of it that sync_weights refreshes: asynchronous
    rollouts sample from weights the optimizer is not changing under them."""

    def __init__(self, model: Any, tokenizer: Any, source: Any = None):
        self.model, self.tok, self.source = model, tokenizer, source
        self.decoder = OffsetDecoder(tokenizer)
        self.eos_ids = eos_ids(model, tokenizer)
        self.pad_id = pad_id_of(tokenizer, self.eos_ids)
        self.context = context_limit(model, tokenizer)  # prompt + generation must fit (checked per call)
        self.warned_context = False
        self._reported: dict[int, tuple] = {}  # rows of the current call already finished for on_done

    def sync_weights(self) -> None:
        """Copy the trainer's trained parameters into the sampling copy; nothing to do without one
        (generation then uses the training model itself)."""
        if self.source is not None:
            copy_trained(self.source, self.model)

    def generate(self, prompts: Prompts, n: int, params: SamplingParams,
                 on_done: Callable[[int, str], None] | None = None) -> RolloutBatch:
        """n completions of each prompt (texts, or token ids fed as they are); rows i*n .. i*n+n-1
        belong to prompt i (group id i). on_done(row, text) is called once per row as soon as it ends
        (EOS or stop), before the batch is complete, with the text the batch will hold; rows cut by
        the length limit are not reported."""
        enc = left_padded(prompt_ids_of(self.tok, prompts), self.pad_id)
        texts = prompt_texts_of(self.tok, prompts)
        warning = check_context(int(enc["attention_mask"].sum(1).max()), params.max_new_tokens, self.context)
        if warning and not self.warned_context:
            console.print(f"[yellow]warning:[/] {warning}", soft_wrap=True)
            self.warned_context = True
        ids = enc["input_ids"].repeat_interleave(n, 0)  # (B, P)
        attn = enc["attention_mask"].repeat_interleave(n, 0)  # (B, P)
        budget = thinking_budget(self.tok, params, texts, n)  # None unless params.thinking_budget is set
        self._reported = {}
        out = self._sample(ids, attn, params, on_done, n, budget)[:, ids.shape[1]:]  # (B, T) generated part
        rows = [self._reported.pop(i, None) or self._row(out[i].tolist(), params.stop) for i in range(out.shape[0])]
        width = max(1, max(len(r[0]) for r in rows))
        completion = torch.full((len(rows), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.bool)
        for i, (tokens, *_rest) in enumerate(rows):
            completion[i, : len(tokens)] = torch.tensor(tokens, dtype=torch.long)
            mask[i, : len(tokens)] = True
        prompt_ids = [row[attn[i].bool()].tolist() for i, row in enumerate(ids)]
        return RolloutBatch(
            prompt_ids=prompt_ids, completion_ids=completion, mask=mask, texts=[r[1] for r in rows],
            offsets=[r[2] for r in rows], group_ids=torch.arange(len(prompts)).repeat_interleave(n),
            finished=torch.tensor([r[3] for r in rows], dtype=torch.bool),
            prompts=[p for p in texts for _ in range(n)])

    @torch.no_grad()
    def _sample(self, ids: torch.Tensor, attn: torch.Tensor, params: SamplingParams,
                on_done: Callable[[int, str], None] | None, n: int = 1, budget: Any = None) -> torch.Tensor:
        """(B, P) prompts, each repeated n times in a row -> (B, P + T) prompt and generated ids."""
        greedy = params.temperature == 0
        config = GenerationConfig(
            max_new_tokens=params.max_new_tokens, do_sample=not greedy, use_cache=True,
            temperature=None if greedy else params.temperature, top_p=None if greedy else params.top_p,
            top_k=None if greedy or params.top_k == 0 else params.top_k,
            min_p=None if greedy or params.min_p == 0 else params.min_p,
            pad_token_id=self.pad_id, eos_token_id=self.eos_ids)
        # custom processors run before generate's temperature and filters: the penalty on the raw logits
        processors = [_RepeatPenalty(params.repetition_penalty, attn)] if params.repetition_penalty != 1.0 else []
        processors += [budget] if budget else []
        watch = params.stop or on_done is not None
        criteria = StoppingCriteriaList([_RowWatcher(self, params.stop, ids.shape[1], on_done)] if watch else [])
        was_training = self.model.training
        self.model.eval()
        device = self.model.device
        try:
            # Sampling draws never disturb the trainer's RNG (the CUDA one too when on a GPU).
            with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
                torch.manual_seed(params.seed)
                out = self.model.generate(input_ids=ids.to(device), attention_mask=attn.to(device),
                                          generation_config=config, stopping_criteria=criteria,
                                          logits_processor=LogitsProcessorList(processors))
            return out.cpu()
        finally:
            self.model.train(was_training)

    def _row(self, generated: list[int], stops: tuple[str, ...]) -> tuple[list[int], str, list, bool]:
        """Valid tokens (through the first EOS or stop string), text, offsets, finished."""
        return finish_row(self.decoder, self.eos_ids, generated, stops)

    def _report(self, i: int, generated: list[int], stops: tuple[str, ...], on_done: Callable[[int, str], None]) -> None:
        """Row i has ended: finish it, hand its text to on_done, and keep it for the batch (the padding
        that follows an ended row changes none of it, so it is not decoded twice)."""
        row = self._reported[i] = self._row(generated, stops)
        on_done(i, row[1])


def own_copy(policy: Any) -> Any:
    """A frozen copy of the policy to sample from (LoRA adapters and all), on the policy's device."""
    copy = deepcopy(policy)
    copy.requires_grad_(False)
    return copy


@torch.no_grad()
def copy_trained(source: Any, copy: Any) -> None:
    """The parameters the optimizer moves (requires_grad in `source`) into `copy`, made by own_copy:
    its parameters come in the same order; frozen ones never change, so they are not copied."""
    for p, q in zip(source.parameters(), copy.parameters(), strict=True):
        if p.requires_grad:
            q.copy_(p)
