"""`botgrpo bench algos`: estimator speed and memory against a masked-sum floor and a per-group loop.

Timing: every candidate runs once to warm up, then the candidates run round-robin `repeats`
times (so load from other processes hits all of them alike) and we keep medians.
Memory (measured after timing): torch's CPU allocator keeps no statistics, so we read the
process's resident-set high-water mark (Linux VmHWM): reset it through /proc/self/clear_refs, run
the candidate once, and report (VmHWM - VmRSS before) in units of one float32 (B, T) tensor,
outputs included. glibc is told to serve every allocation of 1 MiB or more with mmap, so freed
temporaries return to the OS and cannot hide in a reused heap. The floor's figure (its one
temporary: 1.00) shows the method counts what it should.
"""

from __future__ import annotations

import ctypes
import gc
import statistics
import time
from dataclasses import dataclass
from typing import Callable

import torch
from torch import Tensor

from botgrpo_cli.algos import compute_advantages, masked_sum

_M_MMAP_THRESHOLD = -3  # mallopt parameter number in glibc's malloc.h


@dataclass(frozen=True)
class Batch:
    """Synthetic rollout batch: ragged lengths, token rewards = score + sparse penalties."""

    rewards: Tensor  # (B, T) float32
    scores: Tensor  # (B,)
    mask: Tensor  # (B, T) bool
    group_ids: Tensor  # (B,)
    step_ends: Tensor  # (B, T) bool, ~5% of tokens end a step


@dataclass(frozen=True)
class Result:
    name: str
    median_s: float
    peak_extra: float | None  # in (B, T) float32 tensors; None where it was not measured


@dataclass(frozen=True)
class Report:
    results: list[Result]  # the floor first
    loop_max_abs_diff: float  # |per-group loop - bot_grpo|, max over tokens: the baseline is the same math
    threads: int  # torch intra-op threads during the measurement


def make_batch(batch: int, groups: int, seq_len: int, seed: int = 0) -> Batch:
    gen = torch.Generator().manual_seed(seed)
    group_ids = torch.arange(batch) % groups
    lengths = torch.randint(seq_len // 8, seq_len + 1, (batch,), generator=gen)
    mask = torch.arange(seq_len)[None, :] < lengths[:, None]  # (B, T)
    scores = (torch.rand(batch, generator=gen) < 0.3).float()
    penalty = torch.rand(batch, seq_len, generator=gen) < 0.02
    rewards = (scores[:, None] - penalty.float()) * mask
    step_ends = torch.rand(batch, seq_len, generator=gen) < 0.05
    return Batch(rewards, scores, mask, group_ids, step_ends)


def loop_bot_grpo(rewards: Tensor, mask: Tensor, group_ids: Tensor, eps: float = 1e-4) -> Tensor:
    """bot_grpo written the obvious way: a Python loop over groups, vectorised inside each group."""
    out = torch.zeros_like(rewards)
    for gid in torch.unique(group_ids).tolist():
        rows = (group_ids == gid).nonzero().squeeze(1)
        r, m = rewards[rows], mask[rows].float()  # (n_k, T)
        length = m.sum(1, keepdim=True)
        w = m / length.clamp(min=1)
        count = (length > 0).sum()
        if count < 2:
            continue
        mu = (w * r).sum() / count
        sd = ((w * (r - mu) ** 2).sum() / (count - 1)).sqrt()
        out[rows] = m * (r - mu) / (sd + eps)
    return out


def _status_kib(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise OSError(f"{field} not in /proc/self/status")


def _force_mmap() -> None:
    """Fresh pages for what `fn` allocates: large blocks from mmap, and the heap's free pages given
    back. Without the trim, the timed runs leave large free chunks in the heap, still resident; glibc
    serves new tensors from them and the high-water mark never moves (every estimator read 0.00)."""
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(_M_MMAP_THRESHOLD, 1 << 20)
        libc.malloc_trim(0)
    except (OSError, AttributeError):
        pass  # not glibc: the high-water figure may then under-count reused heap


def peak_extra(fn: Callable[[], object], unit_bytes: int) -> float | None:
    """Resident-memory high-water growth while `fn` runs, in units of `unit_bytes`; None off Linux."""
    # Fresh pages for every large allocation: glibc otherwise raises its mmap threshold after large
    # frees and serves a new tensor from heap that is already resident, which RSS cannot see.
    _force_mmap()
    gc.collect()
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # resets VmHWM to the current VmRSS
        before = _status_kib("VmRSS")
    except OSError:
        return None
    result = fn()
    peak = _status_kib("VmHWM")
    del result
    return (peak - before) * 1024 / unit_bytes


def _candidates(b: Batch) -> dict[str, Callable[[], object]]:
    def adv(name: str, **options) -> Callable[[], Tensor]:
        return lambda: compute_advantages(name, token_rewards=b.rewards, scores=b.scores, mask=b.mask,
                                          group_ids=b.group_ids, **options)

    return {
        "masked sum (floor)": lambda: masked_sum(b.rewards, b.mask),
        "bot_grpo": adv("bot_grpo"),
        "grpo": adv("grpo"),
        "pure": adv("pure", step_ends=b.step_ends),
        "bot_grpo per-group loop": lambda: loop_bot_grpo(b.rewards, b.mask, b.group_ids),
    }


def run(batch: int = 1024, groups: int = 128, seq_len: int = 8192, repeats: int = 5,
        threads: int | None = None, progress: Callable[[str], None] | None = None) -> Report:
    """Check the loop baseline against bot_grpo, time every candidate, then measure its memory."""
    before = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    try:
        return _measure(make_batch(batch, groups, seq_len), repeats, progress)
    finally:
        torch.set_num_threads(before)


def _measure(b: Batch, repeats: int, progress: Callable[[str], None] | None) -> Report:
    candidates = _candidates(b)
    warm = {name: fn() for name, fn in candidates.items()}
    diff = float((warm["bot_grpo"] - warm["bot_grpo per-group loop"]).abs().max())
    del warm
    times: dict[str, list[float]] = {name: [] for name in candidates}
    for i in range(repeats):
        if progress:
            progress(f"repeat {i + 1}/{repeats}")
        for name, fn in candidates.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    _force_mmap()  # after timing, so the timed runs see the allocator's default behaviour
    peaks = {name: peak_extra(fn, b.rewards.numel() * 4) for name, fn in candidates.items()}
    results = [Result(name, statistics.median(times[name]), peaks[name]) for name in candidates]
    return Report(results, diff, torch.get_num_threads())
