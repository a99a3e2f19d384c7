"""Which rows each optimizer step of one rollout batch trains on (mini-batches x epochs).

Rows of a rollout batch are already in a random order (prompts come from a shuffled stream, the
completions of a group are independent samples), so the split uses no random state: a resumed run
splits every batch exactly as the uninterrupted run did. Mini-batch k takes pieces k, k+M, k+2M, ...
(strided, not contiguous): under several processes, each holding a contiguous share of the batch
with a multiple of M pieces, the union of the processes' k-th mini-batches is then exactly the
k-th mini-batch of one process over the whole batch, so both layouts take the same steps.
"""

from __future__ import annotations

import torch
from torch import Tensor

SPLITS = ("groups", "rows")


def units(group_ids: Tensor | None, n_rows: int, split: str) -> list[Tensor]:
    """The indivisible pieces of a batch, in order: runs of equal group id (split=groups) or single
    rows (split=rows, or when no group ids are known). Each is a 1-D tensor of row indices."""
    if split not in SPLITS:
        raise ValueError(f"mini-batch split must be one of {', '.join(SPLITS)}; got {split!r}")
    rows = torch.arange(n_rows)
    if split == "rows" or group_ids is None:
        return list(rows.split(1))
    _, counts = torch.unique_consecutive(group_ids, return_counts=True)
    return list(rows.split(counts.tolist()))


def plan(pieces: list[Tensor], mini_batches: int, epochs: int) -> list[Tensor]:
    """Row indices (ascending) of every optimizer step: piece i goes to mini-batch i mod M, with
    M = min(mini_batches, number of pieces); the M mini-batches repeat for `epochs` passes.
    With 1 x 1: all rows, once."""
    if mini_batches < 1 or epochs < 1:
        raise ValueError(f"mini_batches={mini_batches} and epochs={epochs} must be at least 1")
    m = min(mini_batches, len(pieces))
    chunks = [torch.cat(pieces[k::m]) for k in range(m)]
    return [rows for _ in range(epochs) for rows in chunks]
