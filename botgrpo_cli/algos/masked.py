"""Masked reductions and group statistics by scatter (no Python loops over rows or groups)."""

from __future__ import annotations

from typing import Iterator

import torch
from torch import Tensor


def as_float_mask(mask: Tensor, dtype: torch.dtype = torch.float32) -> Tensor:
    """Mask (B, T) bool or 0/1 -> float of `dtype` (no copy when it already is)."""
    return mask if mask.dtype == dtype else _castable(mask).to(dtype)


def _castable(mask: Tensor) -> Tensor:
    # A bool mask is read as its bytes (0/1): torch's bool -> float cast is a few times slower on CPU.
    return mask.view(torch.uint8) if mask.dtype == torch.bool else mask


# Elements per block of rows (block_rows): a block of each (B, T) operand stays in a core's cache
# between the passes of a row-wise computation, which then reads its inputs from memory about once.
BLOCK_ELEMENTS = 1 << 18  # 1 MiB of float32: best of 2^15..2^18 and one block at B=1024, T=4096


def block_rows(x: Tensor) -> int:
    """Rows of x (B, T) per block: BLOCK_ELEMENTS of them on CPU, all of them elsewhere."""
    if x.device.type != "cpu":
        return max(1, x.shape[0])
    return max(1, BLOCK_ELEMENTS // max(1, x.shape[1]))


def float_mask_blocks(mask: Tensor, rows: int, dtype: torch.dtype = torch.float32) -> Iterator[Tensor]:
    """The mask's blocks of `rows` rows as float 0/1 of `dtype`, one reused buffer (views when it already is)."""
    if mask.dtype == dtype:
        yield from mask.split(rows)
        return
    buffer = torch.empty(min(rows, mask.shape[0]), *mask.shape[1:], dtype=dtype, device=mask.device)
    for block in _castable(mask).split(rows):
        yield buffer[:block.shape[0]].copy_(block)


def masked_sum(x: Tensor, mask: Tensor, dim: int | None = None) -> Tensor:
    """sum(x * mask) over `dim` (all elements when None). x, mask: same shape."""
    # where() on a bool mask skips the float copy of the mask that x * mask would make
    xm = torch.where(mask, x, 0.0) if mask.dtype == torch.bool else x * mask
    return xm.sum() if dim is None else xm.sum(dim)


def masked_mean(x: Tensor, mask: Tensor, dim: int | None = None) -> Tensor:
    """sum(x * mask) / sum(mask) over `dim`; 0 where the mask is empty (never NaN)."""
    m = as_float_mask(mask, x.dtype)
    count = m.sum() if dim is None else m.sum(dim)
    return masked_sum(x, m, dim) / count.clamp(min=1.0)


def compact_groups(group_ids: Tensor) -> tuple[Tensor, int]:
    """Arbitrary integer group ids (B,) -> dense ids in [0, K) and K."""
    uniq, dense = torch.unique(group_ids, return_inverse=True)
    return dense, int(uniq.numel())


def isolate_failed(group_ids: Tensor, ok: Tensor) -> Tensor:
    """Give each failed row (ok False) a group of its own, so it never shifts its siblings' statistics
    and every estimator gives it 0. (B,), (B,) bool -> (B,) group ids."""
    fresh = group_ids.max() + 1 + torch.arange(len(group_ids), device=group_ids.device)
    return torch.where(ok, group_ids, fresh)


def group_sum(values: Tensor, dense_ids: Tensor, num_groups: int) -> Tensor:
    """Sum per group: values (B,) or (B, C), dense_ids (B,) -> (K,) or (K, C), via index_add_."""
    out = values.new_zeros((num_groups, *values.shape[1:]))
    return out.index_add_(0, dense_ids, values)


def group_count(dense_ids: Tensor, num_groups: int, dtype: torch.dtype = torch.float32) -> Tensor:
    """Number of members per group -> (K,)."""
    return torch.zeros(num_groups, dtype=dtype, device=dense_ids.device).index_add_(
        0, dense_ids, torch.ones_like(dense_ids, dtype=dtype)
    )


# A group whose std is at most this fraction of |mean| is constant up to float32 rounding (the one
# constant-group rule: advantages, DAPO's dynamic sampling and the logged share of constant groups).
CONSTANT_RTOL = 1e-6


def group_moments(values: Tensor, dense_ids: Tensor, num_groups: int) -> tuple[Tensor, Tensor, Tensor]:
    """Per group: member count, mean and Bessel-corrected std (as torch.std) of values (B,) -> 3 x (K,)."""
    n = group_count(dense_ids, num_groups, values.dtype)
    mu = group_sum(values, dense_ids, num_groups) / n
    dev = values - mu[dense_ids]
    std = (group_sum(dev * dev, dense_ids, num_groups) / (n - 1).clamp(min=1)).sqrt()
    return n, mu, std


def degenerate_groups(count: Tensor, mean: Tensor, std: Tensor) -> Tensor:
    """Groups with fewer than two members or (numerically) zero variance -> True. Shapes (K,)."""
    return (count < 2) | (std <= CONSTANT_RTOL * mean.abs())


def reverse_cumsum(x: Tensor, dim: int = -1) -> Tensor:
    """out[..., t] = sum_{u >= t} x[..., u]."""
    return x.flip(dim).cumsum(dim).flip(dim)


def reverse_cummin(x: Tensor, dim: int = -1) -> Tensor:
    """out[..., t] = min_{u >= t} x[..., u]."""
    return x.flip(dim).cummin(dim).values.flip(dim)
