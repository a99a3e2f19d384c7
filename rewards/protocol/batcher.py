"""Requests that arrive one by one, handed on in batches (a reward function's calls: the `function`
service's, and the client's FunctionPool.submit).

The runner calls `score` from up to max_inflight threads at once; each call queues its request and
waits. One dispatcher thread takes what is queued (up to `batch_size`), runs one call of the
function in the worker child, and hands each waiting call its item or the batch's failure.
"""

from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

LINGER_S = 0.002  # a request arriving this soon after the previous one joins its batch


@dataclass
class Item:
    request: Any
    deadline: float  # time.monotonic() by which the answer is due
    done: threading.Event = field(default_factory=threading.Event)
    result: Any = None  # the function's item, or an exception to raise in the caller
    on_done: Callable[["Item"], None] | None = None  # called (on the dispatcher thread) once result is set


class Batcher:
    """`submit(request, deadline)` -> the function's item for it; `run(batch)` does one call and
    returns one item (or exception) per request."""

    def __init__(self, run: Callable[[list[Item]], list[Any]], batch_size: int):
        self._run = run
        self.batch_size = batch_size
        self._queue: queue.SimpleQueue[Item | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._loop, name="function-batcher", daemon=True)
        self._thread.start()

    def submit(self, request: Any, deadline: float) -> Item:
        item = self.enqueue(request, deadline)
        item.done.wait(max(0.0, deadline - time.monotonic()))
        return item

    def enqueue(self, request: Any, deadline: float, on_done: Callable[[Item], None] | None = None) -> Item:
        """Queue the request without waiting; `on_done(item)` runs once its result is set."""
        item = Item(request, deadline, on_done=on_done)
        self._queue.put(item)
        return item

    def close(self) -> None:
        self._queue.put(None)

    def _take(self) -> list[Item] | None:
        first = self._queue.get()
        if first is None:
            return None
        batch = [first]
        while len(batch) < self.batch_size:
            try:
                nxt = self._queue.get(timeout=LINGER_S)
            except queue.Empty:
                break
            if nxt is None:
                self._queue.put(None)  # close after this batch
                break
            batch.append(nxt)
        return batch

    def _loop(self) -> None:
        while True:
            batch = self._take()
            if batch is None:
                return
            try:
                results = self._run(batch)
            except Exception as err:  # the runner itself failed: every item of the batch gets it
                results = [err] * len(batch)
            for item, result in zip(batch, results):
                item.result = result
                item.done.set()
                if item.on_done is not None:
                    item.on_done(item)
