"""Checker process: one JSON job per stdin line, one JSON result per stdout line.

Started by pool.py as `python -m botgrpo_rewards.math.worker`. JSON (never pickle) both ways, so
neither side deserializes code. The address space is capped so a huge number fails with
MemoryError here instead of swapping the machine.
"""

from __future__ import annotations

import json
import resource
import sys

from botgrpo_rewards.math.check import JOBS
from botgrpo_rewards.math.latex_fallback import preload

MEMORY_LIMIT_BYTES = 2 << 30


def handle(line: str) -> dict:
    """Run one job line {"job": name, "args": [...]} and describe the outcome."""
    try:
        msg = json.loads(line)
        return {"ok": True, "result": JOBS[msg["job"]](*msg["args"])}
    except MemoryError:
        return {"ok": False, "error": "out of memory"}
    except Exception as err:  # a checker bug must not take the worker down
        return {"ok": False, "error": f"{type(err).__name__}: {err}"}


def main() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT_BYTES, MEMORY_LIMIT_BYTES))
    sys.setrecursionlimit(5000)
    preload()  # before "ready": a job must never pay the seconds-long import inside its time limit
    out = sys.stdout
    out.write('{"ok": true, "result": "ready"}\n')
    out.flush()
    for line in sys.stdin:
        out.write(json.dumps(handle(line), ensure_ascii=True) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
