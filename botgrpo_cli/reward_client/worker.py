"""One reward service child process: a LineChild whose first line is the hello, plus the pool's
per-process bookkeeping (slot, generation, requests in flight, hung/isolated flags)."""

from __future__ import annotations

import json
from typing import Any, Callable

from botgrpo_rewards.protocol import (ChildExited, Hello, LineChild, ProtocolError, ServiceStartError, decode_message,
                                      version_mismatch)


def _is_hello(line: bytes) -> bool:
    """A hello line, of any protocol version (another version is refused by wait_hello, naming both)."""
    try:
        return isinstance(decode_message(line), Hello)
    except ProtocolError as err:
        return err.type == "version"


def _version_of(line: bytes) -> Any:
    try:
        return json.loads(line).get("v")
    except (ValueError, AttributeError):
        return None


class Worker:
    """A started service process. `on_line(worker, line)` gets each stdout line after the hello,
    `on_exit(worker)` runs once when stdout closes (the process died or was killed)."""

    def __init__(self, service: str, argv: list[str], env: dict[str, str] | None, slot: int, generation: int,
                 on_line: Callable[["Worker", bytes], None], on_exit: Callable[["Worker"], None]):
        self.service = service
        self.slot = slot
        self.generation = generation
        self.hello: Hello | None = None
        self.inflight: dict[str, object] = {}  # internal id -> job; guarded by the pool's lock
        self.hung = False  # set when the pool kills it for missing a deadline
        self.isolated = False  # running one suspect request alone; guarded by the pool's lock
        self.answered_at = 0.0  # time.monotonic() of its last answer; guarded by the pool's lock
        self.child = LineChild(argv, f"reward-{service}-{slot}", env=env, ready=_is_hello, stderr="tail",
                               on_line=lambda line: on_line(self, line), on_exit=lambda: on_exit(self))

    @property
    def pid(self) -> int:
        return self.child.pid

    @property
    def exited(self) -> bool:
        """stdout closed and the process reaped; set before on_exit runs."""
        return self.child.exited

    def stderr_tail(self) -> str:
        return self.child.stderr_tail()

    def wait_hello(self, timeout_s: float) -> Hello:
        """Block until the hello line arrived; ServiceStartError (with the stderr tail) otherwise."""
        try:
            line = self.child.wait_ready(timeout_s)
        except ChildExited as err:
            raise self._start_error(str(err).removeprefix(self.child.name + " ")) from None
        if line is None:
            self.kill()
            raise self._start_error(f"sent no hello line within {timeout_s:.0f} s")
        try:
            self.hello = decode_message(line)  # type: ignore[assignment]  # _is_hello accepted it
        except ProtocolError:  # a hello of another protocol version
            self.kill()
            raise ServiceStartError(version_mismatch(f"reward service {self.service!r}", _version_of(line))) from None
        return self.hello  # type: ignore[return-value]

    def send(self, line: str) -> bool:
        """Write one line; False when the process is gone (its exit handler re-sends what it had)."""
        return self.child.send(line)

    def kill(self) -> None:
        self.child.kill()

    def close_stdin(self) -> None:
        self.child.close_stdin()

    def stop(self, timeout_s: float) -> None:
        """Close its input (after a shutdown line) and give it `timeout_s` to exit; then kill it."""
        self.child.stop(timeout_s)

    def _start_error(self, what: str) -> ServiceStartError:
        tail = self.stderr_tail().strip() or "(nothing on stderr)"
        own = tail.splitlines()[-1]
        if own.startswith(f"error: reward service {self.service!r} could not "):
            # the service's own one line (botgrpo_rewards.run.start_service) says why and what to do; by hand it says the same
            return ServiceStartError(own.removeprefix("error: "))
        return ServiceStartError(
            f"reward service {self.service!r} {what}. Its stderr ended with:\n{tail}\n"
            f"Run `botgrpo reward serve {self.service}` by hand to see the problem."
        )
