"""Start one reward service: load its backend, then serve on stdin/stdout or HTTP.

Exit codes of `python -m botgrpo_rewards` (and of `run_service`): 0 after shutdown/EOF or Ctrl-C;
EXIT_START_FAILED (1) when the backend's `start()` raised or the service could not run (one line
on stderr says why); EXIT_USAGE (2) for an unknown service name or an --http address that cannot be served
(malformed, or beyond loopback without a token).
"""

from __future__ import annotations

import logging
import sys
from typing import TYPE_CHECKING

from botgrpo_rewards.backend import Backend
from botgrpo_rewards.protocol import ServiceStartError
from botgrpo_rewards.registry import load_backend
from botgrpo_rewards.service import ServiceRunner, serve_stdio

if TYPE_CHECKING:
    from botgrpo_rewards.http_server import HttpSettings

EXIT_START_FAILED = 1
EXIT_USAGE = 2
MAX_MESSAGE = 1000

log = logging.getLogger("botgrpo_rewards")


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


def check_http(http: str, settings: HttpSettings | None = None) -> tuple[str, int]:
    """(host, port) of an --http address that may be served with these settings; ValueError (one
    line) otherwise. Run before the backend starts, so a bad address costs no start-up."""
    from botgrpo_rewards.http_server import HttpSettings, check_exposure, parse_address

    host, port = parse_address(http)
    check_exposure(host, settings or HttpSettings.from_env())
    return host, port


def serve_runner(runner: ServiceRunner, http: str | None = None, settings: HttpSettings | None = None) -> int:
    """Serve a started runner until shutdown/EOF (stdio) or Ctrl-C (HTTP); the exit code.
    Raises ValueError (one line) when the HTTP address cannot be served."""
    if http is None:
        return serve_stdio(runner)
    from botgrpo_rewards.http_server import serve_http

    host, port = check_http(http, settings)
    return serve_http(runner, host, port, settings)


def run_service(backend: Backend | str, http: str | None = None, max_inflight: int | None = None,
                settings: HttpSettings | None = None) -> int:
    """Serve `backend` (an instance or a registered name); the exit code. A failed start is one
    line on stderr and EXIT_START_FAILED; an address that cannot be served is EXIT_USAGE.

    Raises KeyError for an unknown name.
    """
    if isinstance(backend, str):
        backend = load_backend(backend)
    try:
        if http is not None:
            check_http(http, settings)  # a bad address fails before the backend starts
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr, flush=True)
        return EXIT_USAGE
    try:
        runner = start_runner(backend, max_inflight)
    except ServiceStartError as err:
        print(f"error: {err}", file=sys.stderr, flush=True)
        return EXIT_START_FAILED
    try:
        return serve_runner(runner, http, settings)
    except ValueError as err:  # e.g. the port is taken
        print(f"error: {err}", file=sys.stderr, flush=True)
        return EXIT_START_FAILED
