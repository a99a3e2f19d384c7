"""Noise on a completion's span rewards before they become token rewards (`reward.span_noise`).

A tool for asking how much a token-level method depends on a clean span reward (the paper's
"stability matters more than richness"): each span is dropped with probability `drop`, its sign
flipped with probability `flip`, and each of its boundaries moved by up to `jitter` characters,
clamped to the text. The sequence score is never touched and a span's magnitude never grows, so
span rewards stay in [-1, 1]. Pure: the same spans, text length and seed give the same result.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Mapping

from botgrpo_cli.errors import closest
from botgrpo_cli.rollout.seeds import key_seed

Spans = list[tuple[int, int, float]]  # (start, end, reward): code points, half-open

KEYS = ("drop", "flip", "jitter")


@dataclass(frozen=True)
class SpanNoise:
    drop: float = 0.0  # probability a span is removed
    flip: float = 0.0  # probability a kept span's reward changes sign
    jitter: int = 0  # each boundary moves by a uniform integer in [-jitter, jitter]

    @property
    def off(self) -> bool:
        return self.drop == 0 and self.flip == 0 and self.jitter == 0


def parse_span_noise(options: Mapping[str, Any]) -> SpanNoise:
    """`reward.span_noise` ({drop, flip, jitter}, any subset; {} = off) -> SpanNoise.
    Raises ValueError with what is wrong and what is allowed."""
    if not isinstance(options, Mapping):
        raise ValueError(f"must be a mapping {{drop: P, flip: P, jitter: N}}, got {options!r}")
    unknown = sorted(set(options) - set(KEYS))
    if unknown:
        near = closest(str(unknown[0]), list(KEYS))
        raise ValueError(f"has unknown key(s) {', '.join(map(str, unknown))}; "
                         + (f"did you mean {near[0]}? " if near else "") + f"allowed: {', '.join(KEYS)}")
    for key in ("drop", "flip"):
        p = options.get(key, 0.0)
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 <= p <= 1:
            raise ValueError(f"{key} must be a probability in [0, 1], got {p!r}")
    jitter = options.get("jitter", 0)
    if isinstance(jitter, bool) or not isinstance(jitter, int) or jitter < 0:
        raise ValueError(f"jitter must be a whole number of characters >= 0, got {jitter!r}")
    return SpanNoise(float(options.get("drop", 0.0)), float(options.get("flip", 0.0)), jitter)


def noise_seed(*key: int) -> int:
    """The seed of one row's noise (run seed, step, rank, row), by the one seed rule (rollout/seeds.py)."""
    return key_seed(*key)


def noisy_spans(spans: Spans, text_len: int, noise: SpanNoise, seed: int) -> Spans:
    """The spans after noise. Every span takes the same four draws whatever the settings (drop,
    flip, start shift, end shift), so raising one probability changes only what it governs.
    Boundaries are clamped to [0, text_len]; a span jittered past its own start ends there (empty)."""
    if noise.off:
        return list(spans)
    rng = random.Random(seed)
    out: Spans = []
    for start, end, reward in spans:
        u_drop, u_flip = rng.random(), rng.random()
        d_start, d_end = rng.randint(-noise.jitter, noise.jitter), rng.randint(-noise.jitter, noise.jitter)
        if u_drop < noise.drop:
            continue
        new_start = min(max(start + d_start, 0), text_len)
        new_end = max(min(max(end + d_end, 0), text_len), new_start)
        out.append((new_start, new_end, -reward if u_flip < noise.flip else reward))
    return out
