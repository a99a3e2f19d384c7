"""Start one reward service: load its backend, then serve on stdin/stdout or HTTP.

Exit codes of `python -m botgrpo_rewards` (and of `run_service`): 0 after shutdown/EOF or Ctrl-C;
EXIT_START_FAILED (1) when the backend's `start()` raised or the service could not run (one line
on stderr says why); EXIT_USAGE (2) for an unknown service name or a bad --http address.
"""

from __future__ import annotations

import logging
import sys

from botgrpo_rewards.backend import Backend
from botgrpo_rewards.registry import load_backend
from botgrpo_rewards.service import ServiceRunner, serve_stdio

EXIT_START_FAILED = 1
EXIT_USAGE = 2
MAX_MESSAGE = 1000

log = logging.getLogger("botgrpo_rewards")


class ServiceStartError(RuntimeError):
    """A backend's `start()` raised; the message is one line that says what went wrong."""


def setup_logging() -> None:
    """Logs go to stderr: stdout carries protocol lines only."""
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(name)s[%(process)d] %(levelname)s %(message)s")


def one_line(err: BaseException) -> str:
    """`Type: message`, cut to the message's first non-empty line (a tool's call log follows it).
    Generic type names (Error, Exception) add nothing and are left out."""
    lines = [ln.strip() for ln in str(err).splitlines() if ln.strip()]
    name = type(err).__name__
    if not lines:
        return name
    return (lines[0] if name in ("Error", "Exception") else f"{name}: {lines[0]}")[:MAX_MESSAGE]


def start_runner(backend: Backend, max_inflight: int | None = None) -> ServiceRunner:
    """A started runner for `backend`. Raises ServiceStartError (after closing what the backend
    had already started) when `start()` fails."""
    runner = ServiceRunner(backend, max_inflight=max_inflight)
    try:
        runner.start()
    except Exception as err:  # whatever start() raises, the user gets one line, not a traceback
        try:
            backend.close()
        except Exception as close_err:  # a half-started backend may not close cleanly
            log.debug("closing %s after a failed start: %s", backend.name, close_err)
        raise ServiceStartError(f"reward service {backend.name!r} could not start: {one_line(err)}") from err
    return runner


def serve_runner(runner: ServiceRunner, http: str | None = None) -> int:
    """Serve a started runner until shutdown/EOF (stdio) or Ctrl-C (HTTP); the exit code."""
    if http is None:
        return serve_stdio(runner)
    from botgrpo_rewards.http_server import parse_address, serve_http

    host, port = parse_address(http)
    return serve_http(runner, host, port)


def run_service(backend: Backend | str, http: str | None = None, max_inflight: int | None = None) -> int:
    """Serve `backend` (an instance or a registered name); the exit code. A failed start is one
    line on stderr and EXIT_START_FAILED.

    Raises KeyError for an unknown name and ValueError for a bad --http address.
    """
    if isinstance(backend, str):
        backend = load_backend(backend)
    if http is not None:
        from botgrpo_rewards.http_server import parse_address

        parse_address(http)  # a bad address fails before the backend starts
    try:
        runner = start_runner(backend, max_inflight)
    except ServiceStartError as err:
        print(f"error: {err}", file=sys.stderr, flush=True)
        return EXIT_START_FAILED
    return serve_runner(runner, http)
