"""The one bounded cache the services use (math verdicts, render's reference renders, VLM verdicts)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Callable


class LRU:
    """A thread-safe least-recently-used cache of `size` entries and, when `max_bytes` is given, of at
    most that many bytes as `weigh(value)` counts them (one entry larger than that is not kept);
    `get` answers None on a miss (never store None)."""

    def __init__(self, size: int, max_bytes: int | None = None, weigh: Callable[[Any], int] | None = None):
        if (max_bytes is None) != (weigh is None):
            raise ValueError("LRU: max_bytes and weigh go together")
        self.size = size
        self.max_bytes = max_bytes
        self._weigh = weigh
        self._weights: dict = {}
        self.bytes = 0
        self._data: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Any) -> Any:
        with self._lock:
            if key not in self._data:
                return None
            self._data.move_to_end(key)
            return self._data[key]

    def put(self, key: Any, value: Any) -> None:
        weight = self._weigh(value) if self._weigh is not None else 0
        with self._lock:
            self._drop(key)
            if self.max_bytes is not None and weight > self.max_bytes:
                return
            self._data[key] = value
            self._weights[key] = weight
            self.bytes += weight
            while len(self._data) > self.size or (self.max_bytes is not None and self.bytes > self.max_bytes):
                self._drop(next(iter(self._data)))

    def _drop(self, key: Any) -> None:
        if key in self._data:
            del self._data[key]
            self.bytes -= self._weights.pop(key)

    def __len__(self) -> int:
        with self._lock:
            return len(self._data)
