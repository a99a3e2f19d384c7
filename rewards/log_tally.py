"""Repeated log lines, summed up: a hostile client opening thousands of sockets costs a few lines.

`note(kind, message)` logs the first line of each kind at once and only counts the rest; `flush()`
(called on a timer) writes one summary line per kind once its interval has passed, then the next
line of that kind is logged at once again.
"""

from __future__ import annotations

import logging
import time


class LogTally:
    def __init__(self, log: logging.Logger, interval_s: float = 10.0, clock=time.monotonic):
        self.log, self.interval_s, self.clock = log, interval_s, clock
        self._open: dict[str, tuple[float, int, int]] = {}  # kind -> (interval start, level, lines held back)

    def note(self, level: int, kind: str, message: str, *args: object) -> None:
        held = self._open.get(kind)
        if held is None:
            self._open[kind] = (self.clock(), level, 0)
            self.log.log(level, message, *args)
        else:
            self._open[kind] = (held[0], held[1], held[2] + 1)

    def flush(self, everything: bool = False) -> None:
        """Summarise the kinds whose interval has passed (all of them with `everything`, at shutdown)."""
        now = self.clock()
        for kind, (start, level, count) in list(self._open.items()):
            if everything or now - start >= self.interval_s:
                del self._open[kind]
                if count:
                    self.log.log(level, "%d more in the last %.0f s: %s", count, now - start, kind)
