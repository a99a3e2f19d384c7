"""A long-lived Node process running checker.js, one batch of checks at a time, bounded by deadlines.

The channel to Node is private to this backend (JSON Lines, described at the top of checker.js).
Checks that arrive while Node is busy wait and then go together as one batch: their snippets share
one TypeScript program, so the expensive part of a type check is paid once per batch.
The process is killed and restarted when a check overruns its deadline, when Node dies, and when
its heap grows past a limit, so one hostile completion never wedges it. A waiting check's deadline
runs while it waits (README.md, "Deadlines and the batch queue", says why). The process itself is
a LineChild (botgrpo_rewards.protocol), as every child of the client and the services is.
"""

from __future__ import annotations

import json
import logging
import shutil
import threading
import time
from collections import deque
from itertools import count
from pathlib import Path
from typing import Any

from botgrpo_rewards.backend import BackendError, BackendTimeout
from botgrpo_rewards.protocol import ChildExited, LineChild, cpu_seconds
from botgrpo_rewards.react.node_home import missing, node_home

HERE = Path(__file__).resolve().parent
log = logging.getLogger("botgrpo_rewards.react")


def tsgo_installed() -> bool:
    """Whether the Node packages' install (node_home) holds tsgo (@typescript/native-preview); whether
    it starts and passes its self-test is decided by checker.js."""
    return (node_home() / "node_modules" / "@typescript" / "native-preview").is_dir()


def _is_ready(line: bytes) -> bool:
    try:
        return json.loads(line).get("ready") is True
    except (ValueError, AttributeError):
        return False


MAX_BATCH = 64  # checker.js's SLOTS: snippets one TypeScript program holds (a training step's 64 in one pass)
# A batch's code, at most: its checks share one deadline's worth of time (type checking costs about
# 8 us of CPU per character with tsgo, 30 with TypeScript 5.9, measured at load ~7: so ~0.5 s and
# ~2 s here, a fraction of the 10 s default deadline); the first check of a batch goes whatever its size.
MAX_BATCH_CHARS = 64_000
# A burst of requests (a training step's completions) reaches the backend within about this of
# each other: a check that finds Node idle waits this long for company before it goes alone, but
# only while checks have been overlapping lately (one of the last RECENT arrived to a busy or
# queued checker), so one-at-a-time callers never pay it.
LINGER_S = 0.001
RECENT = 16
# A tsgo that hangs blocks Node inside tsgo's synchronous API, so the check times out and Node is
# restarted, with tsgo again. After this many such timeouts in a row (no answer between them), Node
# is restarted on TypeScript 5.9 for good, with one warning line: the same answers, at more cost.
TSGO_TIMEOUTS = 2


class _Ticket:
    """One caller's check, waiting to be sent in a batch and then for its reply."""

    def __init__(self, code: str, types: bool, max_errors: int, deadline: float, spec: bool = False,
                 component: str | None = None):
        self.msg: dict[str, Any] = {"code": code, "types": types, "max_errors": max_errors, "spec": spec,
                                    "component": component}
        self.deadline = deadline
        self.done = threading.Event()
        self.reply: dict[str, Any] | None = None
        self.error: Exception | None = None


class NodeChecker:
    """Thread-safe client of one checker.js process: a caller that finds Node free sends its check
    with every other waiting one (up to MAX_BATCH) as one batch and hands each caller its reply."""

    def __init__(self, heap_limit_mb: int = 768, max_old_space_mb: int = 1536, startup_timeout_s: float = 60.0,
                 checker: str | None = None, tsgo_rss_limit_mb: int | None = None):
        """`checker`: "ts5" or "tsgo" forces that type checker (as BOTGRPO_REACT_CHECKER does); None picks
        tsgo when it is installed and passes its self-test (checker.js). `tsgo_rss_limit_mb`: tsgo's
        resident memory past which Node replaces the tsgo process between batches (default
        BOTGRPO_REACT_TSGO_RSS_MB, else 1024; type_checkers.js)."""
        node = shutil.which("node")
        if node is None:
            raise BackendError("Node.js was not found on PATH; install Node 20 (e.g. apt-get install nodejs)")
        home = node_home()
        if (problem := missing(home)) is not None:
            raise BackendError(problem)
        self._argv = [node, f"--max-old-space-size={max_old_space_mb}", str(home / "checker.js")]
        self.heap_limit = heap_limit_mb * 1024 * 1024
        self.startup_timeout_s = startup_timeout_s
        self.restarts = 0
        self.largest_batch = 0  # the most checks Node got at once (for tests and benchmarks)
        self._lock = threading.Lock()  # held by the thread talking to Node
        self._turn = threading.Condition()  # guards _waiting and _sending; notified when a batch is done
        self._waiting: list[_Ticket] = []
        self._sending = False
        self._overlapped: deque[bool] = deque(maxlen=RECENT)  # per arrival: was another check ahead of it?
        self.lingered = 0  # how many checks waited for company (for tests and benchmarks)
        self._ids = count(1)
        self._node: LineChild | None = None
        # Which type checker the Node process runs (checker.js: tsgo or ts5), as its ready line says.
        self.checker: str | None = None
        self.checker_version: str | None = None
        self._checker_pid: int | None = None  # tsgo's own process, a child of Node (CPU accounting)
        self._noted: LineChild | None = None  # the process whose ready line _note_checker read
        # BOTGRPO_REACT_CHECKER for Node: the forced checker, or ts5 once tsgo fell back (restarts keep it).
        self._env: dict[str, str] = {"BOTGRPO_REACT_CHECKER": checker} if checker else {}
        if tsgo_rss_limit_mb is not None:
            self._env["BOTGRPO_REACT_TSGO_RSS_MB"] = str(tsgo_rss_limit_mb)
        self._tsgo_timeouts = 0  # checks in a row that timed out while tsgo was the checker

    def start(self) -> None:
        """Spawn Node and wait until it has warmed up (lib files and @types/react parsed)."""
        with self._lock:
            self._spawn()
            self._await_ready(time.monotonic() + self.startup_timeout_s)

    def close(self) -> None:
        with self._lock:
            if self._node is not None:
                self._node.kill()
                self._node = None

    def check(self, code: str, types: bool, max_errors: int, deadline: float, spec: bool = False,
              component: str | None = None) -> dict[str, Any]:
        """The checker's findings for `code` (see checker.js; with `spec`, the syntax tree's `facts`
        too, the props those of `component` if it is declared); BackendTimeout past `deadline`.
        While Node is busy the check waits; the next caller to find Node free sends every waiting check."""
        ticket = _Ticket(code, types, max_errors, deadline, spec, component)
        with self._turn:
            self._overlapped.append(self._sending or bool(self._waiting))
            self._waiting.append(ticket)
            while self._sending and not ticket.done.is_set() and time.monotonic() < deadline:
                self._turn.wait(max(0.0, deadline - time.monotonic()))
            if not ticket.done.is_set():
                if self._sending:  # still busy at the deadline
                    self._waiting.remove(ticket)
                    raise BackendTimeout("the react checker was busy with earlier requests until the deadline")
                self._sending = True
                if len(self._waiting) == 1 and any(self._overlapped):  # Node idle, bursts lately: gather
                    self.lingered += 1
                    seen = 0
                    while seen < len(self._waiting) < MAX_BATCH:
                        seen = len(self._waiting)
                        self._turn.wait(LINGER_S)
                batch = self._take_batch(ticket)
        if not ticket.done.is_set():
            try:
                with self._lock:
                    self._send(batch)
            finally:
                with self._turn:
                    self._sending = False
                    self._turn.notify_all()
        if ticket.error is not None:
            raise ticket.error
        assert ticket.reply is not None
        return ticket.reply

    def _take_batch(self, first: _Ticket) -> list[_Ticket]:
        """`first` and the checks waiting after it, within MAX_BATCH checks and MAX_BATCH_CHARS of code
        (called holding _turn); they leave the waiting list."""
        batch, chars = [first], len(first.msg["code"])
        for t in self._waiting:
            if len(batch) == MAX_BATCH:
                break
            if t is not first and chars + len(t.msg["code"]) <= MAX_BATCH_CHARS:
                batch.append(t)
                chars += len(t.msg["code"])
        taken = set(map(id, batch))
        self._waiting = [t for t in self._waiting if id(t) not in taken]
        return batch

    @property
    def busy(self) -> bool:
        """A batch is with Node now (checks handed over meanwhile wait for the next one)."""
        with self._turn:
            return self._sending

    @property
    def pid(self) -> int | None:
        """Process id of the current Node process (None before start or after close)."""
        return None if self._node is None else self._node.pid

    def cpu_seconds(self) -> float | None:
        """CPU time (user + system) the current Node process and its tsgo process have used, where
        /proc exists (Linux)."""
        node = self._node
        if node is None:
            return None
        own = node.cpu_seconds()
        tsgo = cpu_seconds(self._checker_pid) if self._checker_pid else None
        return own if own is None or tsgo is None else own + tsgo

    # -- internals (called with the lock held) ------------------------------------------------

    def _spawn(self) -> None:
        # Its own process group, so a kill also ends the esbuild helper; stderr is inherited: Node's
        # own crash messages land in the service log.
        self._node = LineChild(self._argv, "react-node", cwd=HERE, ready=_is_ready, own_group=True,
                               env=self._env or None)

    def _restart(self) -> None:
        """Kill the current process and start a new one; it warms up while nobody waits on it."""
        self.restarts += 1
        if self._node is None:
            self._spawn()
            return
        self._node.kill()
        self._spawn()

    def _next(self, deadline: float) -> dict[str, Any] | None:
        """Node's next JSON line, or None at the deadline; ChildExited when Node is gone."""
        while True:
            line = self._node.receive(deadline - time.monotonic())  # type: ignore[union-attr]
            if line is None:
                return None
            try:
                return json.loads(line)
            except ValueError:
                log.warning("react checker wrote a non-JSON line: %r", line[:200])

    def _await_ready(self, deadline: float) -> None:
        node = self._node
        assert node is not None
        limit = node.started_at + self.startup_timeout_s
        try:
            ready = node.wait_ready(min(deadline, limit) - time.monotonic())
        except ChildExited:
            self._restart()
            raise BackendError("the react checker (Node) exited while starting; see the service log") from None
        if ready is None:
            if time.monotonic() >= limit:
                self._restart()
                raise BackendError(f"the react checker did not start within {self.startup_timeout_s:.0f} s")
            raise BackendTimeout("the react checker was still starting at the deadline")
        if node is not self._noted:  # once per process
            self._noted = node
            self._note_checker(json.loads(ready))

    def _note_checker(self, ready: dict[str, Any]) -> None:
        """Log which type checker runs (once, and again only when it changes) from the ready line."""
        self._checker_pid = ready.get("checker_pid")
        name, version = ready.get("checker"), ready.get("version")
        if (name, version) != (self.checker, self.checker_version):
            self.checker, self.checker_version = name, version
            label = "tsgo (TypeScript native preview)" if name == "tsgo" else "TypeScript"
            note = f" ({ready['note']})" if ready.get("note") else ""
            log.info("react checker: %s %s%s", label, version, note)

    def _send(self, batch: list[_Ticket]) -> None:
        """Send `batch` to Node as one request and settle every ticket in it (lock held)."""
        live = [t for t in batch if t.deadline > time.monotonic()]
        for t in batch:
            if t not in live:
                self._settle(t, error=BackendTimeout("the react checker was busy with earlier requests until the deadline"))
        if not live:
            return
        deadline = max(t.deadline for t in live)
        self.largest_batch = max(self.largest_batch, len(live))
        try:
            if self._node is None:
                self._spawn()
            self._await_ready(min(t.deadline for t in live))
            rid = next(self._ids)
            msgs = [{**t.msg, "id": f"{rid}.{k}"} for k, t in enumerate(live)]
            # ASCII-escaped JSON: lone surrogates travel as \udXXX escapes and reach JS unchanged.
            if not self._node.send(json.dumps({"batch": msgs}, ensure_ascii=True)):  # type: ignore[union-attr]
                self._restart()  # Node died since the last check
                raise BackendError("the react checker (Node) was gone; restarted")
            replies = self._await([m["id"] for m in msgs], deadline)
        except (BackendError, BackendTimeout) as err:
            for t in live:
                self._settle(t, error=err)
            return
        for t, reply in zip(live, replies):
            if time.monotonic() > t.deadline:  # the batch ran past this check's own deadline
                self._settle(t, error=BackendTimeout("the react check did not finish by the deadline"))
            elif "internal" in reply:  # Node survived it and rebuilt its TypeScript service
                self._settle(t, error=BackendError(
                    f"the react checker failed on this input: {reply['internal'].splitlines()[0]}"))
            else:
                self._settle(t, reply=reply)

    def _use_ts5(self) -> None:
        """Node processes from now on check types with TypeScript 5.9 (this one already may)."""
        self.checker, self.checker_version = "ts5", None
        self._env["BOTGRPO_REACT_CHECKER"] = "ts5"

    def _timed_out(self) -> None:
        """Count a check that timed out; the TSGO_TIMEOUTS-th in a row on tsgo moves Node to TypeScript 5.9."""
        if self.checker != "tsgo":
            return
        self._tsgo_timeouts += 1
        if self._tsgo_timeouts >= TSGO_TIMEOUTS:
            log.warning("react checker: %d checks in a row timed out on tsgo (a hung tsgo blocks Node): "
                        "TypeScript 5.9 checks types from now on", self._tsgo_timeouts)
            self._use_ts5()

    @staticmethod
    def _settle(t: _Ticket, reply: dict[str, Any] | None = None, error: Exception | None = None) -> None:
        t.reply, t.error = reply, error
        t.done.set()

    def _await(self, ids: list[str], deadline: float) -> list[dict[str, Any]]:
        while True:
            try:
                msg = self._next(deadline)
            except ChildExited as err:
                self._restart()
                raise BackendError(f"the react checker (Node) died during this check (exit {err.returncode}); "
                                   "restarted") from None
            if msg is None:
                self._timed_out()
                self._restart()
                raise BackendTimeout("the react check did not finish by the deadline (checker restarted)")
            replies = msg.get("batch")
            if not isinstance(replies, list) or [r.get("id") for r in replies] != ids:
                continue  # a stale reply cannot happen after a restart; skip it defensively
            self._checker_pid = msg.get("checker_pid")
            if msg.get("fallback"):  # tsgo broke twice on this batch; TypeScript 5.9 answered it
                log.warning("react checker: %s", msg["fallback"])
                self._use_ts5()
            self._tsgo_timeouts = 0
            if msg.get("heap", 0) > self.heap_limit:
                log.info("react checker heap %d MB is over the limit: restarting", msg["heap"] >> 20)
                self._restart()
            return replies
