"""A lean CPU decode loop for Llama-class decoders (Llama, Qwen2, Qwen3, Mistral without sliding window)
and Gemma 3's text decoder (sliding-window and global layers; decoder_layers.py).

What it saves over HF `generate` on the same model object (so weights are always current, LoRA included):
- the prompt of a group runs once and its KV cache is copied G times (HF prefills G identical copies);
- a preallocated KV cache written in place and one fused step per token, with no logits-processor,
  stopping-criteria or cache-class machinery in between;
- rows that ended (EOS or a stop string) leave the batch, so later steps compute only live rows.
Greedy output equals HF generate's; sampling draws one uniform per original row and step from a
generator seeded by `SamplingParams.seed`, so a row's tokens do not depend on which other rows ended.
Other architectures fall back to HF generate (the reason is logged once per engine).
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator

import torch

from botgrpo_cli.console import console
from botgrpo_cli.decoder_layers import (GEMMA3, LLAMA_CLASS, attend_and_feed_forward, base_of, causal_mask,
                                        final_logits, query_key_value, rope_moving_with_length, rope_of, rotary,
                                        unsupported_reason, window_of)
from botgrpo_cli.rollout.base import SamplingParams
from botgrpo_cli.rollout.hf import HFEngine
from botgrpo_cli.rollout.sampling import filtered_logits, penalize_repeats, seen_tokens

__all__ = ["DECODES", "FastEngine", "pick"]

DECODES = (*LLAMA_CLASS, GEMMA3)  # the model types this loop runs


@contextlib.contextmanager
def frozen_linears_cast_once(model: Any) -> Iterator[None]:
    """Under CPU autocast, hold frozen nn.Linear weights and biases (requires_grad False: LoRA's base
    layers, an evaluation model) in the autocast dtype for the duration, and put the float32 tensors
    back after. Autocast casts such a tensor again on every forward, one per generated token (it
    keeps casts only of tensors that require grad); casting once gives the very same values.
    A weight tied to a non-linear module (a head sharing the embedding's matrix) stays float32
    there, as autocast leaves it: the linear gets a cast copy of its own for the call."""
    if not torch.is_autocast_enabled("cpu"):
        yield
        return
    dtype = torch.get_autocast_dtype("cpu")
    tied = {id(p) for m in model.modules() if not isinstance(m, torch.nn.Linear) for p in m.parameters(recurse=False)}
    kept, swapped = [], []
    for module in model.modules():
        if isinstance(module, torch.nn.Linear):
            for name in ("weight", "bias"):
                p = module._parameters.get(name)
                if p is None or p.requires_grad or p.dtype != torch.float32:
                    continue
                if id(p) in tied:
                    swapped.append((module, name, p))
                    module._parameters[name] = torch.nn.Parameter(p.data.to(dtype), requires_grad=False)
                else:
                    kept.append((p, p.data))
                    p.data = p.data.to(dtype)
    try:
        yield
    finally:
        for p, data in kept:
            p.data = data
        for module, name, p in swapped:
            module._parameters[name] = p


class _Decoder:
    """The model's own modules, called in order with a preallocated cache: (b, t) ids -> (b, V) logits."""

    def __init__(self, model: Any):
        self.base = base_of(model)
        self.body = self.base.model
        self.layers = list(self.body.layers)
        self.ropes = [rope_of(self.body, layer) for layer in self.layers]  # Gemma 3: one per layer type
        self.windows = [window_of(layer) for layer in self.layers]  # None, or a sliding window
        self._rope: dict[str | None, tuple[torch.Tensor, torch.Tensor]] = {}  # cos, sin (L, d) of every position

    def rope_table(self, like: torch.Tensor, length: int) -> None:
        """Compute cos/sin once for positions 0 .. length-1 instead of at every step. Each position's
        values are elementwise in the position, so a row of the table is what the module gives for it;
        rope types whose frequencies move with the sequence length (dynamic, longrope) are left alone."""
        if rope_moving_with_length(self.body):
            return
        for rope in set(self.ropes):
            cos, sin = rotary(self.body, like, torch.arange(length, device=like.device)[None], rope)
            self._rope[rope] = cos[0], sin[0]

    def _cos_sin(self, h: torch.Tensor, pos: torch.Tensor, rope: str | None) -> tuple[torch.Tensor, torch.Tensor]:
        if rope not in self._rope:
            return rotary(self.body, h, pos, rope)
        return self._rope[rope][0][pos], self._rope[rope][1][pos]  # (b, t, d)

    def new_cache(self, rows: int, length: int, like: torch.Tensor) -> list[tuple[torch.Tensor, torch.Tensor]]:
        a = self.layers[0].self_attn
        shape = (rows, self.body.config.num_key_value_heads, length, a.head_dim)
        return [(like.new_zeros(shape), like.new_zeros(shape)) for _ in self.layers]

    def forward(self, ids: torch.Tensor, pos: torch.Tensor, cache: list, at: int, keys_ok: torch.Tensor) -> torch.Tensor:
        """Run tokens `ids` (b, t) at cache columns at .. at+t; keys_ok (b, at+t) marks real key columns.
        Returns the last position's logits (b, V) in float32."""
        h = self.body.embed_tokens(ids)
        end = at + ids.shape[1]
        ropes = {rope: self._cos_sin(h, pos, rope) for rope in set(self.ropes)}
        # A sliding layer attends over the columns its window can reach, as transformers' sliding
        # cache holds them (the prefill over all: its first queries reach back to column 0).
        start = {w: 0 if w is None else max(0, at + 1 - w) for w in set(self.windows)}
        masks = {w: causal_mask(keys_ok, at, end, w)[..., start[w]:] for w in set(self.windows)}  # (b, 1, t, end - start)
        for layer, rope, window, (k_cache, v_cache) in zip(self.layers, self.ropes, self.windows, cache):
            q, k, v = query_key_value(layer, h, *ropes[rope])
            k_cache[:, :, at:end] = k
            v_cache[:, :, at:end] = v
            first = start[window]
            h = attend_and_feed_forward(layer, h, q, k_cache[:, :, first:end], v_cache[:, :, first:end], masks[window])
        return final_logits(self.base, h[:, -1]).float()


def pick(logits: torch.Tensor, u: torch.Tensor, params: SamplingParams, seen: torch.Tensor | None = None) -> torch.Tensor:
    """Next token per row from (b, V) logits: the repetition penalty over `seen` (b, V) tokens, then
    argmax when greedy, else inverse-CDF sampling with the row's uniform u (b,) over the temperature-,
    top-k-, top-p- and min-p-filtered probabilities (rollout/sampling.py)."""
    if seen is not None:
        logits = penalize_repeats(logits, seen, params.repetition_penalty)
    if params.temperature == 0:
        return logits.argmax(-1)
    probs = torch.softmax(filtered_logits(logits, params.temperature, params.top_k, params.top_p, params.min_p), -1)
    cdf = probs.double().cumsum(-1)  # float64: u * total stays below the total, so a token with mass is hit
    return torch.searchsorted(cdf, (u.double() * cdf[:, -1])[:, None], right=True).squeeze(1)


class KeptCache:
    """The K/V of the rows of the last generate call, by the tokens they hold. A multi-turn
    continuation's prompt starts with a row of the turn before (its prompt and the tokens it
    generated), so its prefill starts where that row's cache ends instead of at column 0."""

    def __init__(self) -> None:
        self.rows: dict[tuple[int, ...], list[tuple[torch.Tensor, torch.Tensor]]] = {}

    def keep(self, tokens: list[int], cache: list, row: int, cols: torch.Tensor) -> None:
        """Row `row` of `cache` holds `tokens` in its first len(cols) columns where `cols` (bool) is True."""
        width = cols.shape[0]
        self.rows[tuple(tokens)] = [(k[row, :, :width][:, cols].clone(), v[row, :, :width][:, cols].clone())
                                    for k, v in cache]

    def longest_prefix(self, prompt: list[int]) -> tuple[int, list] | None:
        """The longest kept row whose tokens start `prompt` (its length and its K/V), or None."""
        for length in sorted({len(k) for k in self.rows}, reverse=True):
            if 0 < length <= len(prompt):
                found = self.rows.get(tuple(prompt[:length]))
                if found is not None:
                    return length, found
        return None


class FastEngine(HFEngine):
    """HFEngine's batch assembly around the lean decode loop (or HF generate where it cannot run)."""

    def __init__(self, model: Any, tokenizer: Any, source: Any = None):
        super().__init__(model, tokenizer, source)
        self.fallback = unsupported_reason(model, DECODES)
        self._told = False
        self.kept: KeptCache | None = None  # set while keeping_cache() is on

    @contextlib.contextmanager
    def keeping_cache(self) -> Iterator[None]:
        """While on, each call keeps its rows' K/V for the next call's prompts that continue them
        (rollout/turns.py around one multi-turn rollout, during which the weights do not change)."""
        self.kept = KeptCache()
        try:
            yield
        finally:
            self.kept = None

    @torch.no_grad()
    def _sample(self, ids: torch.Tensor, attn: torch.Tensor, params: SamplingParams,
                on_done: Callable[[int, str], None] | None, n: int = 1, budget: Any = None) -> torch.Tensor:
        if self.fallback is not None:
            if not self._told:
                console.print(f"rollout: lean decode loop unavailable ({self.fallback}); using HF generate")
                self._told = True
            return super()._sample(ids, attn, params, on_done, n, budget)
        was_training = self.model.training
        self.model.eval()
        try:
            with frozen_linears_cast_once(self.model):
                return self._decode(ids, attn, params, on_done, n, budget)
        finally:
            self.model.train(was_training)

    def _reuse_kept(self, prompts: list[list[int]], cache: list, width: int) -> int:
        """Copy the kept K/V of each prompt's longest kept prefix into its columns of `cache` (prompts
        are padded on the left to `width`); the first column the prefill must still compute."""
        if self.kept is None or not self.kept.rows:
            return 0
        first = width - 1  # at least each row's last prompt token runs: its logits start the decode
        for i, prompt in enumerate(prompts):
            start = width - len(prompt)
            found = self.kept.longest_prefix(prompt[:-1])
            if found is None:
                first = min(first, start)
                continue
            done, kv = found
            for (k, v), (kk, vv) in zip(cache, kv):
                k[i, :, start:start + done] = kk
                v[i, :, start:start + done] = vv
            first = min(first, start + done)
        return max(0, first)

    def _decode(self, ids: torch.Tensor, attn: torch.Tensor, params: SamplingParams,
                on_done: Callable[[int, str], None] | None, n: int, budget: Any = None) -> torch.Tensor:
        """ids/attn (B, P) hold each prompt n times in a row; returns (B, P + T) like generate."""
        dec = _Decoder(self.model)
        device = next(self.model.parameters()).device
        prompts, pattn = ids[::n].to(device), attn[::n].to(device).bool()  # (p, P): one copy per group
        total, width = ids.shape[0], ids.shape[1]
        length = width + params.max_new_tokens
        keys_ok = torch.zeros((prompts.shape[0], length), dtype=torch.bool, device=device)
        keys_ok[:, :width] = pattn
        pos = (pattn.long().cumsum(1) - 1).clamp(min=0)  # (p, P) as generate numbers left-padded rows
        embedded = dec.body.embed_tokens(prompts[:1, :1])
        probe = dec.layers[0].self_attn.k_proj(embedded)  # the cache's dtype
        cache = dec.new_cache(prompts.shape[0], length, probe)
        dec.rope_table(embedded, length)
        valid = [row[ok].tolist() for row, ok in zip(prompts.cpu(), pattn.cpu())]  # each prompt's ids
        first = self._reuse_kept(valid, cache, width) if n == 1 and all(w is None for w in dec.windows) else 0
        logits = dec.forward(prompts[:, first:], pos[:, first:], cache, first, keys_ok)  # (p, V)
        if self.kept is not None:
            self.kept = KeptCache()  # this call's rows, for the next call
        # one prefill per group, then every row gets its own copy of the group's cache
        cache = [(k.repeat_interleave(n, 0), v.repeat_interleave(n, 0)) for k, v in cache]
        logits, keys_ok = logits.repeat_interleave(n, 0), keys_ok.repeat_interleave(n, 0)
        next_pos = pattn.sum(1).repeat_interleave(n, 0)  # (B,) position of the first new token
        out = torch.full((total, params.max_new_tokens), self.pad_id, dtype=torch.long)
        live = torch.arange(total)  # original row of each batch row
        gen = torch.Generator().manual_seed(params.seed)
        eos = torch.tensor(self.eos_ids)
        # tokens each row has seen (prompt and completion so far), for the repetition penalty
        seen = None if params.repetition_penalty == 1.0 else \
            seen_tokens(prompts, pattn, logits.shape[-1]).repeat_interleave(n, 0)  # (B, V) on the device
        window = 4 * max((len(s) for s in params.stop), default=0) + 4
        for t in range(params.max_new_tokens):
            u = torch.rand(total, generator=gen)  # one draw per original row: independent of who is live
            if budget is not None:  # the thinking budget: a spent row may only write its close tag
                budget.force(live.tolist(), logits)
            rows = live.to(device)
            tok = pick(logits, u[live].to(logits.device), params, None if seen is None else seen[rows]).cpu()  # (b,)
            if seen is not None:
                seen[rows, tok.to(device)] = True
            if budget is not None:
                budget.observe(live.tolist(), tok.tolist())
            out[live, t] = tok
            ended = torch.isin(tok, eos)
            if params.stop:
                tails = self.tok.batch_decode(out[live, max(0, t + 1 - window): t + 1], skip_special_tokens=True)
                ended |= torch.tensor([any(s in x for s in params.stop) for x in tails])
            if on_done is not None:
                for i in live[ended].tolist():
                    self._report(i, out[i, : t + 1].tolist(), params.stop, on_done)
            done = bool(ended.all()) or t + 1 == params.max_new_tokens
            if self.kept is not None:  # the rows that leave (all, at the end): their cache, for the next call
                for b in (range(len(live)) if done else ended.nonzero().squeeze(1).tolist()):
                    r = int(live[b])
                    self.kept.keep(valid[r // n] + out[r, :t].tolist(), cache, b, keys_ok[b, :width + t])
            if done:
                return torch.cat([ids, out[:, : t + 1]], 1)
            if bool(ended.any()):  # drop ended rows from the batch and from the cache
                keep = (~ended).nonzero().squeeze(1)
                live, next_pos, keys_ok = live[keep], next_pos[keep], keys_ok[keep.to(device)]
                cache = [(k[keep.to(device)], v[keep.to(device)]) for k, v in cache]
                tok = tok[keep]
            at = width + t
            keys_ok[:, at] = True
            logits = dec.forward(tok[:, None].to(device), (next_pos + t)[:, None].to(device), cache, at, keys_ok)
        return torch.cat([ids, out], 1)
