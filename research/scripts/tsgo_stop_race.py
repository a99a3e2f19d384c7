"""Why test_repeated_tsgo_hangs_end_on_typescript_5_9 once saw a SIGSTOPped tsgo answer (DID NOT RAISE
BackendTimeout, in a whole-suite run at load ~8), made to happen every time.

kill(pid, SIGSTOP) returns once the signal is queued. The kernel wakes one thread of the process
(the main thread when it can take it) to dequeue it; only that thread, when it runs, stops the
others (the group stop). Until then every other thread of tsgo runs, and Go's runtime serves the
API on whichever thread is free: a check sent meanwhile is answered. On a loaded machine the
woken thread can wait for a CPU for as long as Node and tsgo take to answer one small check.

1. Natural window: SIGSTOP an idle tsgo and read its threads' states at once, many times: how
   often kill() has returned while some thread still runs (SIGCONT between tries).
2. Forced: the main thread of tsgo is held by ptrace (PTRACE_SEIZE) when it takes the SIGSTOP,
   so it cannot start the group stop: the state "kill() returned, the stop has not landed", kept
   for as long as wanted. The test's old sequence (kill, then check) gets the check answered:
   the failure, every time. The test's sequence now (tests/conftest.py's stop_process: kill, then
   wait until every thread shows state T) does not send the check until the stop has landed; the
   ptrace hold is then let go with the SIGSTOP handed on, every thread stops, and the check times out.

Run from the repository root: .venv/bin/python research/scripts/tsgo_stop_race.py [rounds]
Needs Linux, ptrace of one's own descendant (root, or yama ptrace_scope <= 1) and tsgo installed.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from conftest import _stopped, _thread_states  # noqa: E402  the tests' own helpers

from botgrpo_rewards.backend import BackendTimeout  # noqa: E402
from botgrpo_rewards.react.checker import NodeChecker  # noqa: E402

TYPE_ERROR = 'export function D({ title }: { title: string }) { const n: number = title; return <h1>{n}</h1>; }'
PTRACE_CONT, PTRACE_DETACH, PTRACE_SEIZE = 7, 17, 0x4206
WALL = 0x40000000  # __WALL: wait for a traced thread that is not our child
libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
libc.ptrace.restype = ctypes.c_long


def ptrace(request: int, pid: int, data: int = 0) -> None:
    if libc.ptrace(request, pid, None, ctypes.c_void_p(data)) != 0:
        raise OSError(ctypes.get_errno(), f"ptrace({request:#x}, {pid}): {os.strerror(ctypes.get_errno())}")


def states(pid: int) -> str:
    return "".join(_thread_states(pid))


def checker() -> NodeChecker:
    nc = NodeChecker(startup_timeout_s=300)
    nc.start()
    assert nc.checker == "tsgo" and nc._checker_pid
    return nc


def natural_window(tries: int = 200) -> None:
    """How long after kill(SIGSTOP) returns tsgo's threads go on running, against how long Node and
    tsgo take to answer a check: the race the test lost is the first outlasting the second."""
    nc = checker()
    pid, running, lags = nc._checker_pid, 0, []
    answers = []
    for k in range(5):
        started = time.perf_counter()
        nc.check(TYPE_ERROR.replace("D(", f"D{k}("), True, 5, time.monotonic() + 60)
        answers.append(time.perf_counter() - started)
    for _ in range(tries):
        started = time.perf_counter()
        os.kill(pid, signal.SIGSTOP)
        running += any(s != "T" for s in states(pid))  # read at once, as the test used to send its check at once
        while not _stopped(pid):
            pass
        lags.append(time.perf_counter() - started)
        os.kill(pid, signal.SIGCONT)
        while any(s == "T" for s in states(pid)):
            time.sleep(0.001)
    nc.close()
    lags.sort()
    print(f"1. natural window (load {os.getloadavg()[0]:.2f}): right after kill(SIGSTOP) returned, some tsgo thread "
          f"still ran in {running} of {tries} tries; until every thread stopped: median {lags[len(lags) // 2] * 1e3:.2f} "
          f"ms, max {lags[-1] * 1e3:.2f} ms. A check answered by a running tsgo: median "
          f"{sorted(answers)[2] * 1e3:.1f} ms")


def hold_the_stop(pid: int) -> None:
    """SIGSTOP `pid` with its main thread seized: return once that thread has taken the signal and sits
    in ptrace's signal-delivery stop, the other threads running."""
    ptrace(PTRACE_SEIZE, pid)
    os.kill(pid, signal.SIGSTOP)
    while True:
        _, status = os.waitpid(pid, WALL)
        sig, event = os.WSTOPSIG(status), status >> 16
        if event == 0 and sig == signal.SIGSTOP:
            return
        if event:  # a group stop: another thread took the SIGSTOP first (this round forces nothing)
            raise RuntimeError("another thread of tsgo took the SIGSTOP first; run again")
        ptrace(PTRACE_CONT, pid, sig)  # any other signal (Go's SIGURG): hand it on


def forced(round_no: int) -> None:
    # The test's old sequence: kill, then the check at once, the stop held off meanwhile.
    nc = checker()
    pid = nc._checker_pid
    hold_the_stop(pid)
    held = states(pid)
    try:
        reply = nc.check(TYPE_ERROR, True, 5, time.monotonic() + 3)
        old = f"answered ({[d['code'] for d in reply['types']]}): DID NOT RAISE BackendTimeout"
    except BackendTimeout:
        old = "timed out"
    ptrace(PTRACE_DETACH, pid, signal.SIGSTOP)  # the held SIGSTOP goes on: the group stop lands now
    nc.close()

    # The test's sequence now: kill, wait until every thread shows T, then the check.
    nc = checker()
    pid = nc._checker_pid
    hold_the_stop(pid)
    waited_while_held = not _stopped(pid)  # stop_process would still be waiting here: no check sent
    ptrace(PTRACE_DETACH, pid, signal.SIGSTOP)
    end = time.monotonic() + 120
    while not _stopped(pid) and time.monotonic() < end:
        time.sleep(0.005)
    try:
        nc.check(TYPE_ERROR, True, 5, time.monotonic() + 3)
        new = "answered: DID NOT RAISE"
    except BackendTimeout:
        new = "BackendTimeout, as the test expects"
    nc.close()
    print(f"2.{round_no} forced: thread states while the main thread holds the SIGSTOP: {held} "
          f"(t: held by ptrace; S/R: running); old sequence: {old}; new sequence: stop_process still waiting "
          f"while held: {waited_while_held}, after the stop landed: {new}")


if __name__ == "__main__":
    os.environ["BOTGRPO_REACT_CHECKER"] = "tsgo"
    os.environ["BOTGRPO_REACT_WARMUP_ROUNDS"] = "1"
    print(f"uptime: {os.popen('uptime').read().strip()}")
    natural_window()
    for k in range(1, int(sys.argv[1]) + 1 if len(sys.argv) > 1 else 4):
        forced(k)
