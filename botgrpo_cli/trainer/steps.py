"""Reasoning-step boundaries on tokens, for step-level estimators (PURE)."""

from __future__ import annotations

import torch
from torch import Tensor


def step_ends(texts: list[str], offsets: list[list[tuple[int, int]]], separator: str | None, T: int) -> Tensor:
    """(B, T) bool: True on the token holding the last character of each separator occurrence and on
    each completion's last token (the final step). Tokens with no characters never end a step."""
    ends = torch.zeros((len(texts), T), dtype=torch.bool)
    for i, (text, offs) in enumerate(zip(texts, offsets)):
        if offs:
            ends[i, len(offs) - 1] = True
        if not separator:
            continue
        boundaries = _boundaries(text, separator)
        for t, (start, end) in enumerate(offs):
            if start < end and any(start < b <= end for b in boundaries):
                ends[i, t] = True
    return ends


def _boundaries(text: str, separator: str) -> list[int]:
    """Code-point positions just after each non-overlapping occurrence of `separator`."""
    out, pos = [], text.find(separator)
    while pos >= 0:
        out.append(pos + len(separator))
        pos = text.find(separator, pos + len(separator))
    return out
