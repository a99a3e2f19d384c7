"""A seeded, resumable stream of training prompts."""

from __future__ import annotations

import random
from typing import Generic, TypeVar

T = TypeVar("T")


class PromptStream(Generic[T]):
    """Examples in a fresh seeded shuffle each epoch; `position` (items drawn) is the whole state."""

    def __init__(self, items: list[T], seed: int, position: int = 0):
        if not items:
            raise ValueError("the task has no training examples")
        self.items, self.seed, self.position = items, seed, position
        self._epoch, self._order = -1, []

    def _order_of(self, epoch: int) -> list[int]:
        if epoch != self._epoch:
            order = list(range(len(self.items)))
            random.Random(self.seed * 1_000_003 + epoch).shuffle(order)
            self._epoch, self._order = epoch, order
        return self._order

    def take(self, k: int) -> list[T]:
        out = []
        for _ in range(k):
            epoch, index = divmod(self.position, len(self.items))
            out.append(self.items[self._order_of(epoch)[index]])
            self.position += 1
        return out
