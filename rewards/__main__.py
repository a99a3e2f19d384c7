"""`python -m botgrpo_rewards NAME [--http HOST:PORT] [--max-inflight N]`: run one reward service."""

from __future__ import annotations

import argparse
import logging
import sys

from botgrpo_rewards.http_server import parse_address
from botgrpo_rewards.registry import SERVICES
from botgrpo_rewards.run import run_service, setup_logging


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m botgrpo_rewards", description="Run one reward service (protocol v1).")
    parser.add_argument("name", help=f"service: {', '.join(sorted(SERVICES))}")
    parser.add_argument("--http", metavar="HOST:PORT", help="serve over HTTP instead of stdin/stdout (host defaults to 127.0.0.1)")
    parser.add_argument("--max-inflight", type=int, default=None, metavar="N", help="requests scored at once")
    args = parser.parse_args(argv)
    setup_logging()
    if args.name not in SERVICES:
        print(f"error: unknown reward service {args.name!r}; known: {', '.join(sorted(SERVICES))}", file=sys.stderr)
        return 2
    if args.http is not None:
        try:
            parse_address(args.http)
        except ValueError as err:
            print(f"error: {err}", file=sys.stderr)
            return 2
    try:
        return run_service(args.name, http=args.http, max_inflight=args.max_inflight)
    except Exception:
        logging.getLogger("botgrpo_rewards").exception("service %s failed to start", args.name)
        return 1


if __name__ == "__main__":
    sys.exit(main())
