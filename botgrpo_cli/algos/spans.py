"""Span -> token projection (docs/algorithms.md §1): character-span rewards onto generated tokens, and
a scored batch's token rewards (scores shaped and zeroed where scoring failed, those rows masked)."""

from __future__ import annotations

from typing import Sequence

import torch
from torch import Tensor

from botgrpo_cli.algos.masked import as_float_mask


def _padded(rows: list[list[tuple]], width: int, fields: int, what: str) -> Tensor:
    """Ragged rows of tuples -> zero-padded float64 tensor (B, width, fields)."""
    out = torch.zeros(len(rows), width, fields, dtype=torch.float64)
    for i, row in enumerate(rows):
        if len(row) > width:
            raise ValueError(f"{what} row {i} has {len(row)} entries; at most {width} fit")
        if row:
            out[i, : len(row)] = torch.tensor(row, dtype=torch.float64).view(len(row), fields)
    return out


def project_spans(spans: list[list[tuple[int, int, float]]], offsets: list[list[tuple[int, int]]],
                  T: int) -> Tensor:
    """rho[i,t] = sum_spans reward * |chars(t) ∩ span| / |chars(t)|  -> (B, T) float32.

    spans[i]: (start, end, reward) in code points, half-open, over completion i's text;
    offsets[i]: (start, end) code points of each generated token (end == start: no chars -> 0).
    Positions past a completion's tokens are 0. Vectorised over the batch: (B, spans, T).
    """
    if len(spans) != len(offsets):
        raise ValueError(f"spans has {len(spans)} rows but offsets has {len(offsets)}")
    tok = _padded(offsets, T, 2, "offsets")  # (B, T, 2)
    width = max((len(row) for row in spans), default=0)
    if width == 0:
        return torch.zeros(len(offsets), T, dtype=torch.float32)
    span = _padded(spans, width, 3, "spans")  # (B, S, 3); padding spans have reward 0
    if bool((span[..., 1] < span[..., 0]).any()) or bool((tok[..., 1] < tok[..., 0]).any()):
        raise ValueError("every span and token offset needs start <= end")
    t_start, t_end = tok[:, None, :, 0], tok[:, None, :, 1]  # (B, 1, T)
    s_start, s_end, reward = span[..., 0:1], span[..., 1:2], span[..., 2:3]  # (B, S, 1)
    overlap = (torch.minimum(t_end, s_end) - torch.maximum(t_start, s_start)).clamp(min=0)  # (B, S, T)
    chars = tok[..., 1] - tok[..., 0]  # (B, T)
    rho = (overlap * reward).sum(1) / chars.clamp(min=1)  # (B, T)
    return torch.where(chars > 0, rho, 0.0).to(torch.float32)


def token_rewards(scores: Tensor, rho: Tensor, mask: Tensor, lambda_seq: float = 1.0,
                  lambda_tok: float = 1.0) -> Tensor:
    """r[i,t] = (lambda_seq s_i + lambda_tok rho[i,t]) m[i,t]. (B,), (B, T), (B, T) -> (B, T)."""
    r = lambda_seq * scores.to(torch.float32)[:, None] + lambda_tok * rho.to(torch.float32)
    return r * as_float_mask(mask, r.dtype)


def offsets_mask(offsets: Sequence[Sequence[tuple[int, int]]]) -> Tensor:
    """(B, T) bool, True on each row's tokens, T = the longest row."""
    lengths = torch.tensor([len(o) for o in offsets], dtype=torch.long)
    width = int(lengths.max()) if len(lengths) else 0
    return torch.arange(width)[None, :] < lengths[:, None]


def shaped_scores(scores: Tensor, ok: Tensor, shaping: Tensor | None = None) -> Tensor:
    """Scores plus `shaping` (DAPO's overlong penalty) where scoring succeeded, 0 where it failed.
    (B,), (B,) bool, (B,) -> (B,) on scores' device."""
    shaped = scores if shaping is None else scores + shaping.to(scores.device)
    return torch.where(ok.to(scores.device), shaped, 0.0)


def batch_token_rewards(scores: Tensor, ok: Tensor, spans: list[list[tuple[int, int, float]]],
                        offsets: Sequence[Sequence[tuple[int, int]]], mask: Tensor, lambda_seq: float = 1.0,
                        lambda_tok: float = 1.0, shaping: Tensor | None = None) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """A scored batch's (scores, mask, rho, r) on mask's device: shaped_scores; the generated tokens
    of rows whose scoring succeeded (failed rows are masked out); the projected spans; token_rewards.
    scores, ok (B,); mask (B, T) bool; spans and offsets per row."""
    device = mask.device
    ok = ok.to(device)
    scores = shaped_scores(scores.to(device), ok, shaping)  # (B,)
    mask = mask.bool() & ok[:, None]  # (B, T)
    rho = project_spans(spans, list(offsets), mask.shape[1]).to(device)  # (B, T)
    return scores, mask, rho, token_rewards(scores, rho, mask, lambda_seq, lambda_tok)
