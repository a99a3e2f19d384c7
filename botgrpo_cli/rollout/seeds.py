"""The one seed-mixing rule: a base seed and an offset (a step, an epoch, a prompt's digest) give a
derived seed, so a sample depends only on what it names (resuming at a step samples the same)."""

from __future__ import annotations

import hashlib

_MIX = 1_000_003  # a prime: nearby base seeds give far-apart derived seeds
_HELD_OUT = 7919  # evaluations draw apart from training's draws
_ROUNDS = 1009  # a step's offset: room for its dynamic-sampling rounds before the next step's


def text_digest(text: str) -> int:
    """A stable 64-bit number for a text (Python's hash() changes between processes)."""
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")


def mix_seed(seed: int, offset: int, modulus: int | None = 2**63) -> int:
    """seed * 1_000_003 + offset, reduced modulo `modulus` (None: not reduced)."""
    mixed = seed * _MIX + offset
    return mixed if modulus is None else mixed % modulus


def held_out_seed(seed: int) -> int:
    """The one seed every held-out evaluation of a run samples with, so evaluations compare."""
    return seed + _HELD_OUT


def key_seed(*key: int) -> int:
    """A seed from several integers (run seed, step, rank, row), mixed left to right by mix_seed:
    the same in every process and Python version, so a resumed run draws what it drew before."""
    if not key:
        raise ValueError("key_seed needs at least one integer")
    seed = key[0] % 2**63
    for part in key[1:]:
        seed = mix_seed(seed, part)
    return seed


def generation_seed(seed: int, step: int, round_: int) -> int:
    """Sampling seed of one round of one step: resuming at any step samples the same tokens."""
    return mix_seed(seed, step * _ROUNDS + round_)


def prompt_seed(seed: int, prompt: str) -> int:
    """Seed of one prompt's group: independent of the batch and of the process sampling it."""
    return mix_seed(seed, text_digest(prompt))
