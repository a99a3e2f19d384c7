"""Completions -> reward requests -> scores, spans and service metrics (non-ok rows are masked)."""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass

import torch
from torch import Tensor

from botgrpo_rewards.protocol import ScoreRequest, ScoreResponse


@dataclass
class Scored:
    scores: Tensor  # (B,) float; 0 where not ok
    ok: Tensor  # (B,) bool; False rows are masked out of the update and counted
    spans: list[list[tuple[int, int, float]]]  # (B,) code-point spans per completion
    metrics: dict[str, list[float]]  # service metric -> values over the ok rows
    responses: list[ScoreResponse]

    @property
    def masked(self) -> int:
        return int((~self.ok).sum())


def submit(pool, texts: list[str], examples: list, options: list[dict], deadline_ms: int, tag: str) -> list[Future]:
    """Send one request per completion now, so scoring runs while the trainer computes.
    `options`: each completion's request options."""
    return [pool.submit(ScoreRequest(id=f"{tag}-{i}", completion=text, prompt=ex.prompt,
                                     reference=dict(ex.reference), options=opts, deadline_ms=deadline_ms))
            for i, (text, ex, opts) in enumerate(zip(texts, examples, options, strict=True))]


def collect(futures: list[Future]) -> Scored:
    """Wait for every response; a failed one becomes a non-ok row, never a silent 0."""
    responses = [_result(f) for f in futures]
    ok = torch.tensor([r.ok and r.score is not None for r in responses], dtype=torch.bool)
    scores = torch.tensor([float(r.score) if good else 0.0 for r, good in zip(responses, ok.tolist())])
    spans = [[(s.start, s.end, float(s.reward)) for s in r.spans] if good else []
             for r, good in zip(responses, ok.tolist())]
    metrics: dict[str, list[float]] = {}
    for r, good in zip(responses, ok.tolist()):
        for name, value in (r.metrics if good else {}).items():
            metrics.setdefault(name, []).append(float(value))
    return Scored(scores, ok, spans, metrics, responses)


def _result(future: Future) -> ScoreResponse:
    try:
        return future.result()
    except Exception as err:  # the pool answers per item; anything else still becomes a counted error
        return ScoreResponse(id=None, status="error", error=None, info={"exception": repr(err)})


def join(parts: list[Scored]) -> Scored:
    """Concatenate rows of several Scored (for dynamic sampling rounds)."""
    metrics: dict[str, list[float]] = {}
    for p in parts:
        for k, v in p.metrics.items():
            metrics.setdefault(k, []).extend(v)
    return Scored(torch.cat([p.scores for p in parts]), torch.cat([p.ok for p in parts]),
                  [s for p in parts for s in p.spans], metrics, [r for p in parts for r in p.responses])


def select(scored: Scored, rows: Tensor) -> Scored:
    idx = rows.tolist()
    kept = [scored.responses[i] for i in idx]
    metrics: dict[str, list[float]] = {}
    for r in kept:
        for k, v in (r.metrics if r.ok else {}).items():
            metrics.setdefault(k, []).append(float(v))
    return Scored(scored.scores[rows], scored.ok[rows], [scored.spans[i] for i in idx], metrics, kept)
