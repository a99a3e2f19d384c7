"""When tsgo's unstable API breaks, the react checker restarts tsgo and re-sends the batch; when it
breaks again it falls back to TypeScript 5.9 with one warning line. No check is lost and every
answer is the one TypeScript 5.9 gives. Real processes throughout: a SIGKILLed tsgo, and for the
second failure a tsgo binary that will not start again (a wrapper that runs the real one once).
A tsgo over its memory limit is replaced between batches; a hung tsgo (SIGSTOPped, every thread of
it stopped: it never answers) times the check out, and the second such timeout in a row restarts Node
on TypeScript 5.9."""

from __future__ import annotations

import logging
import os
import signal
import stat
import time

import pytest

from botgrpo_rewards.backend import BackendTimeout
from botgrpo_rewards.react.checker import HERE, NodeChecker

TSGO_EXE = HERE / "node_modules" / "@typescript" / f"native-preview-linux-{'x64' if os.uname().machine == 'x86_64' else 'arm64'}" / "lib" / "tsgo"
pytestmark = pytest.mark.skipif(not TSGO_EXE.is_file(), reason="tsgo is not installed (npm ci in rewards/react)")

TYPE_ERROR = 'export function D({ title }: { title: string }) { const n: number = title; return <h1>{n}</h1>; }'
WANT = [{"start": 56, "length": 1, "code": "TS2322", "message": "Type 'string' is not assignable to type 'number'."}]


def check(nc: NodeChecker, code: str = TYPE_ERROR) -> dict:
    return nc.check(code, True, 5, time.monotonic() + 300)  # generous: a loaded machine starts Node slowly


def kill(pid: int) -> None:
    os.kill(pid, signal.SIGKILL)
    end = time.monotonic() + 10
    while time.monotonic() < end:  # gone, or a zombie Node has not reaped yet
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return
        except (FileNotFoundError, ProcessLookupError):  # reaped before, or while, /proc was read
            return
        time.sleep(0.02)


@pytest.fixture
def checker(monkeypatch):
    monkeypatch.setenv("BOTGRPO_REACT_CHECKER", "tsgo")
    monkeypatch.setenv("BOTGRPO_REACT_WARMUP_ROUNDS", "1")
    made: list[NodeChecker] = []

    def start(**settings) -> NodeChecker:
        nc = NodeChecker(startup_timeout_s=300, **settings)
        nc.start()
        made.append(nc)
        return nc

    yield start
    for nc in made:
        nc.close()


def test_a_killed_tsgo_is_restarted_and_the_batch_re_sent(checker, caplog):
    caplog.set_level(logging.INFO, logger="botgrpo_rewards.react")
    nc = checker()
    assert nc.checker == "tsgo" and any("react checker: tsgo" in r.message for r in caplog.records)
    node, tsgo = nc.pid, nc._checker_pid
    kill(tsgo)
    assert check(nc)["types"] == WANT  # answered by a fresh tsgo, in the same Node process
    assert nc.checker == "tsgo" and nc._checker_pid not in (None, tsgo) and nc.pid == node and nc.restarts == 0
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_tsgo_that_breaks_twice_falls_back_to_typescript_5_9_for_good(checker, caplog, tmp_path, monkeypatch):
    once = tmp_path / "tsgo-once"
    once.write_text(f'#!/bin/sh\n[ -e "{tmp_path}/ran" ] && exit 3\ntouch "{tmp_path}/ran"\nexec "{TSGO_EXE}" "$@"\n')
    once.chmod(once.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("BOTGRPO_REACT_TSGO_PATH", str(once))
    caplog.set_level(logging.INFO, logger="botgrpo_rewards.react")
    nc = checker()
    assert nc.checker == "tsgo"
    kill(nc._checker_pid)
    assert check(nc)["types"] == WANT  # tsgo cannot start again: TypeScript 5.9 answered the same batch
    warnings = [r.message for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and "tsgo failed twice" in warnings[0] and "TypeScript 5.9" in warnings[0]
    assert nc.checker == "ts5"
    assert check(nc, TYPE_ERROR.replace("D(", "E("))["types"] == WANT
    kill(nc.pid)  # a later Node process starts on TypeScript 5.9 too, not on the broken tsgo
    with pytest.raises(Exception):
        check(nc)
    assert check(nc)["types"] == WANT and nc.checker == "ts5"
    assert len([r for r in caplog.records if r.levelno >= logging.WARNING]) == 1


def warnings_in(caplog) -> list[str]:
    return [r.message for r in caplog.records if r.levelno >= logging.WARNING]


def test_a_tsgo_over_its_memory_limit_is_replaced_between_batches(checker, caplog):
    nc = checker(tsgo_rss_limit_mb=1)  # every tsgo is over 1 MB: each batch gets a fresh one
    node, seen = nc.pid, {nc._checker_pid}
    for name in "DEF":
        assert check(nc, TYPE_ERROR.replace("D(", f"{name}(")).get("types") == WANT
        assert nc._checker_pid not in seen and nc.checker == "tsgo" and nc.pid == node
        seen.add(nc._checker_pid)
    assert nc.restarts == 0 and not warnings_in(caplog)


def test_repeated_tsgo_hangs_end_on_typescript_5_9(checker, caplog, stop_process):
    caplog.set_level(logging.INFO, logger="botgrpo_rewards.react")
    nc = checker()
    for hang in (1, 2):
        assert nc.checker == "tsgo"
        stop_process(nc._checker_pid)  # Node's next call into tsgo never returns (research/scripts/tsgo_stop_race.py)
        with pytest.raises(BackendTimeout):
            nc.check(TYPE_ERROR, True, 5, time.monotonic() + 3)
        assert nc.restarts == hang
        if hang == 1:
            assert not warnings_in(caplog)
            with nc._lock:  # the restarted Node's ready line: tsgo again, its process id
                nc._await_ready(time.monotonic() + 300)
    [warning] = warnings_in(caplog)
    assert "2 checks in a row timed out on tsgo" in warning and "TypeScript 5.9" in warning
    assert check(nc)["types"] == WANT and nc.checker == "ts5" and nc._checker_pid is None
    assert len(warnings_in(caplog)) == 1
