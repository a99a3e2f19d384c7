"""Start one reward service: load its backend, then serve on stdin/stdout or HTTP."""

from __future__ import annotations

import logging
import sys

from botgrpo_rewards.backend import Backend
from botgrpo_rewards.registry import load_backend
from botgrpo_rewards.service import ServiceRunner, serve_stdio


def setup_logging() -> None:
    """Logs go to stderr: stdout carries protocol lines only."""
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(name)s[%(process)d] %(levelname)s %(message)s")


def run_service(backend: Backend | str, http: str | None = None, max_inflight: int | None = None) -> int:
    """Serve `backend` (an instance or a registered name) until shutdown/EOF (stdio) or Ctrl-C (HTTP).

    Raises KeyError for an unknown name and ValueError for a bad --http address.
    """
    if isinstance(backend, str):
        backend = load_backend(backend)
    runner = ServiceRunner(backend, max_inflight=max_inflight)
    if http is not None:
        from botgrpo_rewards.http_server import parse_address, serve_http

        host, port = parse_address(http)
        runner.start()
        return serve_http(runner, host, port)
    runner.start()
    return serve_stdio(runner)
