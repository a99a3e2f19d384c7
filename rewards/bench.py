"""`python -m botgrpo_rewards.bench SERVICE WORKERS N [--corpus FILE]`: a service's own benchmark (its
internals are its business; `botgrpo bench rewards` starts this as a child process, so the client never
imports backend code). Each service's benchmark is `botgrpo_rewards.<service>.bench.run`; one whose
`run` takes a `corpus` also measures on a graded file the user gives (the math service's: its
docstring and docs/rewards.md say the format)."""

from __future__ import annotations

import importlib
import inspect
import sys
from pathlib import Path

from rich.console import Console

from botgrpo_rewards.registry import UnknownService, check_service


class CorpusError(ValueError):
    """A corpus file a benchmark cannot read: the message names the line and what to fix."""


def main(argv: list[str]) -> int:
    service, workers, n = argv[0], int(argv[1]), int(argv[2])
    extra = {"corpus": Path(argv[4])} if argv[3:4] == ["--corpus"] and len(argv) > 4 else {}
    try:
        check_service(service)
    except UnknownService as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    run = importlib.import_module(f"botgrpo_rewards.{service}.bench").run
    if extra and "corpus" not in inspect.signature(run).parameters:
        print(f"error: the {service} benchmark measures on its own material and takes no --corpus", file=sys.stderr)
        return 2
    try:
        run(Console(), workers=workers, n=n, **extra)
    except CorpusError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
