"""`python -m botgrpo_rewards NAME [--http HOST:PORT [--token T]] [--max-inflight N]`: run one reward service.

Exit codes: 0 after shutdown; 1 when the service could not start or run; 2 for a bad name or
--http address. Errors are one line on stderr. Start-up is run.start_service, the one path every
service start takes (`botgrpo reward serve` too).
"""

from __future__ import annotations

import argparse
import sys

from botgrpo_rewards.http_server import HttpSettings
from botgrpo_rewards.registry import BUILTIN, service_backend
from botgrpo_rewards.run import SERVE_HELP, run_service


def add_http_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--token", default=None, help=SERVE_HELP["token"])
    parser.add_argument("--allow-remote-without-token", action="store_true", help=SERVE_HELP["allow_remote_without_token"])
    parser.add_argument("--max-body-bytes", type=int, default=None, help=SERVE_HELP["max_body_bytes"])
    parser.add_argument("--http-timeout-s", type=float, default=None, help=SERVE_HELP["http_timeout_s"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m botgrpo_rewards", description="Run one reward service (protocol v1).")
    parser.add_argument("name", help=f"service: {', '.join(sorted(BUILTIN))}, or an installed plugin's name")
    parser.add_argument("--http", metavar="HOST:PORT", help=SERVE_HELP["http"])
    parser.add_argument("--max-inflight", type=int, default=None, metavar="N", help=SERVE_HELP["max_inflight"])
    parser.add_argument("--function", metavar="MODULE:NAME", default=None, help=SERVE_HELP["function"])
    add_http_arguments(parser)
    args = parser.parse_args(argv)
    settings = HttpSettings.from_env(token=args.token, allow_remote_without_token=args.allow_remote_without_token,
                                     max_body_bytes=args.max_body_bytes, timeout_s=args.http_timeout_s)
    try:
        backend = service_backend(args.name, args.function)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr, flush=True)
        return 2
    return run_service(backend, http=args.http, max_inflight=args.max_inflight, settings=settings)


if __name__ == "__main__":
    sys.exit(main())
