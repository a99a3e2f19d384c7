"""LineChild, the one child-process manager (botgrpo_base/child.py), driven with real processes:
ready lines, lines both ways, a kill -9 from outside, helpers in its process group, stderr, stop,
stdout to a file or inherited, terminate (SIGTERM, then the group's kill) and dying with the parent."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

import pytest

from botgrpo_rewards.protocol import ChildExited, LineChild, terminate_all

# Says "ready", then echoes each line upper-cased; "exit N" exits with code N.
ECHO = r"""
import sys
print("ready", flush=True)
for line in sys.stdin:
    if line.startswith("exit"):
        sys.exit(int(line.split()[1]))
    print(line.strip().upper(), flush=True)
"""


def _child(script: str = ECHO, **kwargs) -> LineChild:
    kwargs.setdefault("ready", lambda line: line == b"ready\n")
    return LineChild([sys.executable, "-c", script], "probe", **kwargs)


def test_ready_line_then_lines_both_ways():
    child = _child()
    try:
        assert child.wait_ready(30) == b"ready\n"
        assert child.send("hello") and child.send(b"again")
        assert [child.receive(10), child.receive(10)] == [b"HELLO\n", b"AGAIN\n"]  # the ready line is not delivered
        assert child.receive(0.05) is None  # nothing more: a timeout, not an exit
    finally:
        child.kill()


def test_exit_is_seen_after_the_last_line_and_the_process_is_reaped():
    child = _child()
    child.wait_ready(30)
    child.send("last")
    child.send("exit 3")
    assert child.receive(10) == b"LAST\n"
    with pytest.raises(ChildExited) as err:
        child.receive(10)
    assert err.value.returncode == 3 and child.exited and child.returncode == 3
    with pytest.raises(ChildExited):  # and it keeps saying so
        child.receive(0)
    assert child.send("anyone?") is False


def test_kill_9_from_outside_reports_one_exit_after_reaping(pid_gone):
    exits = []
    done = threading.Event()
    child = _child(on_line=lambda line: None, on_exit=lambda: (exits.append(child.returncode), done.set()))
    child.wait_ready(30)
    os.kill(child.pid, signal.SIGKILL)
    assert done.wait(10)
    assert exits == [-signal.SIGKILL] and child.exited and pid_gone(child.pid)


def test_on_line_gets_every_line_in_order():
    got = []
    child = _child(on_line=got.append)
    child.wait_ready(30)
    for i in range(50):
        child.send(f"l{i}")
    child.send("exit 0")
    end = time.monotonic() + 10
    while not child.exited and time.monotonic() < end:
        time.sleep(0.01)
    assert got == [f"L{i}\n".encode() for i in range(50)]


def test_a_child_that_exits_before_its_ready_line_raises_with_its_code():
    child = _child("import sys; sys.exit(7)", stderr="discard")
    with pytest.raises(ChildExited, match="exited with code 7 before it was ready") as err:
        child.wait_ready(30)
    assert err.value.returncode == 7


def test_a_wrong_first_line_is_refused_and_the_child_killed(pid_gone):
    child = _child("import time; print('hello?', flush=True); time.sleep(60)")
    with pytest.raises(ChildExited, match="first line was not a ready line: b'hello"):
        child.wait_ready(30)
    assert child.exited and pid_gone(child.pid)


def test_no_ready_line_in_time_leaves_the_child_starting(pid_gone):
    child = _child("import time; time.sleep(1.0); print('ready', flush=True); time.sleep(60)")
    try:
        assert child.wait_ready(0.05) is None and not child.exited  # still starting: the caller decides
        assert child.wait_ready(30) == b"ready\n"
    finally:
        child.kill()
    assert pid_gone(child.pid)


def test_kill_with_own_group_ends_the_childs_helpers_too(pid_gone):
    script = ("import subprocess, sys, time\n"
              "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
              "print(p.pid, flush=True); time.sleep(60)\n")
    child = LineChild([sys.executable, "-c", script], "grouped", own_group=True)
    helper = int(child.receive(30))
    assert not pid_gone(helper)
    child.kill()
    assert pid_gone(helper, within_s=10)  # init reaps the orphaned helper


def test_stderr_tail_keeps_the_last_lines():
    child = _child("import sys\nfor i in range(100): print('err', i, file=sys.stderr)\nsys.exit(1)", stderr="tail")
    with pytest.raises(ChildExited):
        child.wait_ready(30)
    end = time.monotonic() + 5
    while "err 99" not in child.stderr_tail() and time.monotonic() < end:  # its own thread drains stderr
        time.sleep(0.01)
    lines = child.stderr_tail().splitlines()
    assert lines[-1] == "err 99" and len(lines) == 40


def test_fresh_starts_the_same_program_anew():
    child = _child()
    child.wait_ready(30)
    child.kill()
    again = child.fresh()
    try:
        assert again.pid != child.pid and again.wait_ready(30) == b"ready\n"
        again.send("x")
        assert again.receive(10) == b"X\n"
    finally:
        again.kill()


def test_stop_lets_a_child_finish_and_kills_one_that_does_not():
    polite = _child()
    polite.wait_ready(30)
    polite.stop(10)  # end of input: the echo loop ends, exit 0
    assert polite.proc.returncode == 0
    stubborn = _child("import time\nprint('ready', flush=True)\nwhile True: time.sleep(1)")
    stubborn.wait_ready(30)
    t0 = time.monotonic()
    stubborn.stop(0.2)
    assert stubborn.proc.returncode == -signal.SIGKILL and time.monotonic() - t0 < 5


def test_cpu_seconds_counts_the_childs_own_work():
    child = _child("import time\nprint('ready', flush=True)\nend = time.process_time() + 0.3\n"
                   "while time.process_time() < end: pass\nprint('done', flush=True)\ntime.sleep(60)")
    try:
        child.wait_ready(30)
        assert child.receive(30) == b"done\n"
        assert child.cpu_seconds() >= 0.25
    finally:
        child.kill()


def test_bad_stderr_setting_is_refused_before_starting_anything():
    with pytest.raises(ValueError, match="stderr must be one of"):
        LineChild([sys.executable, "-c", "pass"], "x", stderr="file")


def test_a_ready_check_that_raises_counts_as_no_ready_line():
    def choke(line: bytes) -> bool:
        raise ValueError("garbled")

    child = _child(ready=choke)
    with pytest.raises(ChildExited, match="first line was not a ready line"):
        child.wait_ready(30)


def test_the_project_starts_long_lived_children_only_as_line_children():
    """One manager of child processes: in every package of the project only child.py calls Popen
    (one-shot commands through subprocess.run, e.g. a benchmark's baseline, are not managed)."""
    import ast
    from pathlib import Path

    import botgrpo_cli
    import botgrpo_rewards
    import botgrpo_tasks

    roots = [Path(pkg.__file__).parent for pkg in (botgrpo_cli, botgrpo_rewards, botgrpo_tasks)]
    found = []
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            if "node_modules" in path.parts or path.name == "child.py":
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                name = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""
                if name in ("Popen", "create_subprocess_exec", "create_subprocess_shell"):
                    found.append(f"{path.name}:{node.lineno}")
    assert found == []


# Says "ready" on stdout and "warming" on stderr; on SIGTERM says "saved" and exits 0 (as a trainer does).
POLITE = r"""
import signal, sys, time
def stop(signum, frame):
    print("saved", flush=True)
    sys.exit(0)
signal.signal(signal.SIGTERM, stop)
print("ready", flush=True)
print("warming", file=sys.stderr, flush=True)
while True: time.sleep(0.05)
"""


def _wait_for(check, within_s: float = 10.0) -> bool:
    end = time.monotonic() + within_s
    while not check() and time.monotonic() < end:
        time.sleep(0.02)
    return check()


def test_stdout_to_a_file_with_stderr_and_terminate_lets_it_save(tmp_path):
    log = tmp_path / "log.txt"
    log.write_text("earlier run\n")
    exits = []
    child = LineChild([sys.executable, "-c", POLITE], "polite", stdout=log, stderr="stdout",
                      on_exit=lambda: exits.append(child.returncode))
    assert _wait_for(lambda: "warming" in log.read_text())
    child.terminate(30)
    assert child.returncode == 0 and child.exited and _wait_for(lambda: exits == [0])
    assert log.read_text().splitlines() == ["earlier run", "ready", "warming", "saved"]  # appended, nothing lost
    with pytest.raises(ChildExited):
        child.receive(0)


def test_terminate_kills_what_ignores_sigterm_and_its_helpers(pid_gone):
    script = ("import signal, subprocess, sys, time\n"
              "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
              "p = subprocess.Popen([sys.executable, '-c', 'import signal, time; "
              "signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)'])\n"
              "print(p.pid, flush=True); time.sleep(60)\n")
    child = LineChild([sys.executable, "-c", script], "stubborn", own_group=True)
    helper = int(child.receive(30))
    t0 = time.monotonic()
    child.terminate(0.5)
    assert child.returncode == -signal.SIGKILL and time.monotonic() - t0 < 10
    assert pid_gone(helper, within_s=10)


def test_terminate_all_lets_every_child_save(tmp_path):
    logs = [tmp_path / f"{i}.txt" for i in range(3)]
    children = [LineChild([sys.executable, "-c", POLITE], f"p{i}", stdout=log, stderr="discard")
                for i, log in enumerate(logs)]
    assert all(_wait_for(lambda log=log: "ready" in log.read_text()) for log in logs)
    terminate_all(children, 30)
    assert [c.returncode for c in children] == [0, 0, 0]
    assert all(log.read_text().splitlines() == ["ready", "saved"] for log in logs)


def test_inherited_stdout_reaches_the_parents_stdout():
    import subprocess

    script = ("import sys\nfrom botgrpo_rewards.protocol import LineChild\n"
              "c = LineChild([sys.executable, '-c', 'print(\"from the child\")'], 'inner', stdout='inherit')\n"
              "c.proc.wait(30)\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout == "from the child\n", out.stderr


def test_a_child_started_with_stop_with_parent_dies_with_a_killed_parent(tmp_path, pid_gone):
    """The parent is SIGKILLed, so none of its own clean-up runs; the kernel's SIGTERM still ends the child."""
    import subprocess

    log = tmp_path / "log.txt"
    script = ("import sys, time\nfrom botgrpo_rewards.protocol import LineChild\n"
              f"c = LineChild([sys.executable, '-c', {POLITE!r}], 'orphan', stdout={str(log)!r}, stop_with_parent=True)\n"
              "print(c.pid, flush=True)\ntime.sleep(60)\n")
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        pid = int(parent.stdout.readline())
        assert _wait_for(lambda: "ready" in log.read_text())
        parent.kill()
        parent.wait(10)
        assert _wait_for(lambda: "saved" in log.read_text())  # SIGTERM, not SIGKILL: it could save
        assert pid_gone(pid, within_s=10)
    finally:
        parent.kill()
        parent.stdout.close()


def test_ready_and_on_line_need_a_stdout_pipe():
    for kwargs in ({"ready": lambda line: True}, {"on_line": lambda line: None}):
        with pytest.raises(ValueError, match="need stdout='lines'"):
            LineChild([sys.executable, "-c", "pass"], "x", stdout="inherit", **kwargs)
