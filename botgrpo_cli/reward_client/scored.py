"""Reward responses -> one scored batch -> token rewards r[B,T]: the one path the trainer, the
evaluation and the TRL/verl adapters all take.

The rule for a usable answer is `ScoreResponse.usable` (botgrpo_rewards.protocol): status ok *and* a
score. Anything else (error, timeout, an ok without a score) is a failed row: masked out of
training, counted, and a failure in evaluation; never a silent 0.
"""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Sequence

import torch
from torch import Tensor

from botgrpo_cli.algos.spans import batch_token_rewards, offsets_mask
from botgrpo_cli.reward_client.span_noise import SpanNoise, Spans, noise_seed, noisy_spans
from botgrpo_cli.reward_client.verdicts import finite
from botgrpo_rewards.protocol import ScoreRequest, ScoreResponse

@dataclass
class Scored:
    """One scored batch, everything derived from `responses` (so selecting or joining rows can
    never disagree with `ScoreResponse.usable`)."""

    responses: list[ScoreResponse]
    texts: list[str] = field(default_factory=list)  # the completion each response scored, when known
    ok: Tensor = field(init=False)  # (B,) bool; False rows are masked out and counted
    scores: Tensor = field(init=False)  # (B,) float32; 0 where not ok
    spans: list[Spans] = field(init=False)  # (B,) spans per completion; [] where not ok
    metrics: dict[str, list[float]] = field(init=False)  # service metric -> values over the ok rows

    def __post_init__(self) -> None:
        self.responses = [finite(r) for r in self.responses]
        good = [r.usable for r in self.responses]
        self.ok = torch.tensor(good, dtype=torch.bool)
        self.scores = torch.tensor([float(r.score) if g else 0.0 for r, g in zip(self.responses, good)],
                                   dtype=torch.float32)
        self.spans = [[(s.start, s.end, float(s.reward)) for s in r.spans] if g else []
                      for r, g in zip(self.responses, good)]
        self.metrics = {}
        for r, g in zip(self.responses, good):
            for name, value in (r.metrics if g else {}).items():
                self.metrics.setdefault(name, []).append(float(value))

    @property
    def masked(self) -> int:
        """Rows whose scoring failed."""
        return int((~self.ok).sum())

    @property
    def values(self) -> list[float | None]:
        """The sequence score per row, None where scoring failed (TRL's "no reward")."""
        return [float(s) if g else None for s, g in zip(self.scores.tolist(), self.ok.tolist())]

    def select(self, rows: Tensor) -> "Scored":
        """The rows `rows` (long indices), in that order."""
        idx = rows.tolist()
        return Scored([self.responses[i] for i in idx], [self.texts[i] for i in idx] if self.texts else [])

    @staticmethod
    def join(parts: Sequence["Scored"]) -> "Scored":
        """The rows of several batches, in order (dynamic sampling rounds)."""
        texts = [t for p in parts for t in p.texts] if all(p.texts for p in parts) else []
        return Scored([r for p in parts for r in p.responses], texts)


def score_request(rid: str, text: str, example: Any, options: dict, deadline_ms: int) -> ScoreRequest:
    """The request for one completion of a task example (its prompt and reference)."""
    return ScoreRequest(id=rid, completion=text, prompt=example.prompt, reference=dict(example.reference),
                        options=dict(options), deadline_ms=deadline_ms)


def response_of(future: Future) -> ScoreResponse:
    """The future's response; an exception (the pool answers per item, so a bug) becomes an error row."""
    try:
        return future.result()
    except Exception as err:  # still a counted failure, never a lost row
        return ScoreResponse(id=None, status="error", error=None, info={"exception": repr(err)})


def collect(futures: Sequence[Future], texts: Sequence[str] = ()) -> Scored:
    """Wait for every response (in order) and make the batch."""
    return Scored([response_of(f) for f in futures], list(texts))


@dataclass
class TokenRewards:
    """What the advantage step needs from a scored batch."""

    scores: Tensor  # (B,) sequence scores (plus any shaping), 0 where not ok
    ok: Tensor  # (B,) bool
    mask: Tensor  # (B, T) bool: the generated tokens of ok rows
    rho: Tensor  # (B, T) projected span rewards
    r: Tensor  # (B, T) r = (lambda_seq * score + lambda_tok * rho) * mask


def to_token_rewards(scored: Scored, offsets: Sequence[Sequence[tuple[int, int]]], mask: Tensor | None = None,
                     lambda_seq: float = 1.0, lambda_tok: float = 1.0,
                     shaping: Tensor | None = None, span_noise: SpanNoise | None = None,
                     noise_key: Sequence[int] = ()) -> TokenRewards:
    """Scores, ok-mask, projected spans and token rewards for a batch (docs/algorithms.md §1).

    offsets[i]: code-point (start, end) of each generated token of row i; mask: (B, T) generated
    tokens (default: from the offsets); shaping: (B,) added to the scores of ok rows (DAPO's
    overlong penalty); span_noise (`reward.span_noise`): applied to row i's spans with the seed
    noise_seed(*noise_key, i) (the trainer's key: run seed, step, rank). Tensors come back on
    mask's device."""
    mask = offsets_mask(offsets) if mask is None else mask
    spans = scored.spans if span_noise is None else _noisy(scored, offsets, span_noise, noise_key)
    scores, mask, rho, r = batch_token_rewards(scored.scores, scored.ok, spans, offsets, mask, lambda_seq, lambda_tok,
                                               shaping)  # failed rows: masked out, and counted
    return TokenRewards(scores, scored.ok.to(mask.device), mask, rho, r)


def _noisy(scored: Scored, offsets: Sequence[Sequence[tuple[int, int]]], noise: SpanNoise,
           key: Sequence[int]) -> list[Spans]:
    """Each row's spans after `noise`, clamped to its text (or, texts unknown, to its last token's end)."""
    lengths = [len(t) for t in scored.texts] if scored.texts else [max((e for _, e in o), default=0) for o in offsets]
    return [noisy_spans(spans, n, noise, noise_seed(*key, i))
            for i, (spans, n) in enumerate(zip(scored.spans, lengths))]
