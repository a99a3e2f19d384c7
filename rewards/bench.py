"""`python -m botgrpo_rewards.bench SERVICE WORKERS N`: a service's own benchmark (its internals
are its business; `botgrpo bench rewards` starts this as a child process, so the client never
imports backend code). Each service's benchmark is `botgrpo_rewards.<service>.bench.run`."""

from __future__ import annotations

import importlib
import sys

from rich.console import Console

from botgrpo_rewards.registry import UnknownService, check_service


def main(argv: list[str]) -> int:
    service, workers, n = argv[0], int(argv[1]), int(argv[2])
    try:
        check_service(service)
    except UnknownService as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    importlib.import_module(f"botgrpo_rewards.{service}.bench").run(Console(), workers=workers, n=n)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
