"""The one bounded cache the services use (math verdicts, render's reference renders, VLM verdicts)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any


class LRU:
    """A thread-safe least-recently-used cache of `size` entries; `get` answers None on a miss
    (never store None)."""

    def __init__(self, size: int):
        self.size = size
        self._data: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Any) -> Any:
        with self._lock:
            if key not in self._data:
                return None
            self._data.move_to_end(key)
            return self._data[key]

    def put(self, key: Any, value: Any) -> None:
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            if len(self._data) > self.size:
                self._data.popitem(last=False)

    def __len__(self) -> int:
        with self._lock:
            return len(self._data)
