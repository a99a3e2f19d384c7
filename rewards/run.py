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
from botgrpo_rewards.registry import check_service, load_backend
from botgrpo_rewards.service import ServiceRunner, serve_stdio

if TYPE_CHECKING:
    from botgrpo_rewards.http_server import HttpSettings

EXIT_START_FAILED = 1
EXIT_USAGE = 2
MAX_MESSAGE = 1000

log = logging.getLogger("botgrpo_rewards")


# The options of `botgrpo reward serve` and `python -m botgrpo_rewards`, described once for both.
SERVE_HELP = {
    "http": "Serve over HTTP (host defaults to 127.0.0.1; IPv6 as [::1]:PORT) instead of stdin/stdout.",
    "max_inflight": "Requests scored at once.",
    "token": "HTTP: bearer token every client must send (Authorization: Bearer TOKEN); default $BOTGRPO_REWARD_TOKEN.",
    "allow_remote_without_token": "HTTP: serve beyond loopback with no token (anyone who can connect may use it).",
    "max_body_bytes": "HTTP: largest POST body (default 8000000).",
    "http_timeout_s": "HTTP: close idle connections, and requests not received in full, after this long (default 30).",
    "function": "Service function: the reward function it runs (MODULE:NAME or path/to/file.py:NAME).",
}


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


def start_service(backend: Backend | str, http: str | None = None, max_inflight: int | None = None,
                  settings: HttpSettings | None = None) -> ServiceRunner:
    """The one way a service starts (`python -m botgrpo_rewards`, `botgrpo reward serve`, and so every
    RewardPool child): check the name and the --http address, set up logging, load the backend and
    start it. Raises ValueError (a usage mistake: unknown name, an address that cannot be served)
    before anything loads, or ServiceStartError when loading or starting fails; each one line."""
    if isinstance(backend, str):
        check_service(backend)  # UnknownService: a ValueError
    if http is not None:
        check_http(http, settings)
    setup_logging()
    if isinstance(backend, str):
        name = backend
        try:
            backend = load_backend(name)
        except Exception as err:  # a missing dependency or tool: say which, not a traceback
            raise ServiceStartError(f"reward service {name!r} could not load: {one_line(err)}") from err
    return start_runner(backend, max_inflight)


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
    """Start (start_service) and serve `backend`, an instance or a registered name; the exit code.
    Every failure is one line on stderr: EXIT_USAGE for an unknown name or an address that cannot
    be served, EXIT_START_FAILED when the backend could not load, start or serve."""
    try:
        runner = start_service(backend, http, max_inflight, settings)
    except ValueError as err:
        return _fail(err, EXIT_USAGE)
    except ServiceStartError as err:
        return _fail(err, EXIT_START_FAILED)
    try:
        return serve_runner(runner, http, settings)
    except ValueError as err:  # e.g. the port is taken
        return _fail(err, EXIT_START_FAILED)
    except Exception as err:  # serving failed for another reason: one line, not a traceback
        return _fail(f"reward service {runner.backend.name!r} failed: {one_line(err)}", EXIT_START_FAILED)


def _fail(err: BaseException | str, code: int) -> int:
    print(f"error: {err}", file=sys.stderr, flush=True)
    return code
