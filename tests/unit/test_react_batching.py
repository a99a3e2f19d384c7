"""How the react checker forms batches: at most MAX_BATCH checks and MAX_BATCH_CHARS of code, and a
check that finds Node idle waits LINGER_S for the rest of a burst, once checks have overlapped lately
(real Node for the latter)."""

from __future__ import annotations

import threading
import time

from botgrpo_rewards.react import checker
from botgrpo_rewards.react.checker import MAX_BATCH, MAX_BATCH_CHARS, NodeChecker, _Ticket

COMPONENT = "export function A() { return <div>{%d}</div>; }\n"


def _tickets(sizes: list[int]) -> list[_Ticket]:
    return [_Ticket("x" * n, True, 5, time.monotonic() + 60) for n in sizes]


def test_a_batch_takes_waiting_checks_up_to_the_count_and_the_code_budget():
    nc = NodeChecker.__new__(NodeChecker)  # the batching bookkeeping only: no Node process
    nc._waiting = _tickets([10] * (MAX_BATCH + 5))
    first = nc._waiting[3]
    batch = nc._take_batch(first)
    assert batch[0] is first and len(batch) == MAX_BATCH and len(nc._waiting) == 5
    assert all(t not in batch for t in nc._waiting)

    big = MAX_BATCH_CHARS // 2 + 1
    nc._waiting = _tickets([big, big, 100, big])  # the second and fourth would overrun the budget
    batch = nc._take_batch(nc._waiting[0])
    assert [len(t.msg["code"]) for t in batch] == [big, 100]
    assert [len(t.msg["code"]) for t in nc._waiting] == [big, big]

    nc._waiting = _tickets([MAX_BATCH_CHARS * 3, 10])  # an oversized first check still goes, alone
    assert [len(t.msg["code"]) for t in nc._take_batch(nc._waiting[0])] == [MAX_BATCH_CHARS * 3]


def test_a_check_finding_node_idle_waits_for_the_rest_of_a_burst(monkeypatch):
    monkeypatch.setattr(checker, "LINGER_S", 1.0)  # wide, so a loaded machine cannot miss it
    nc = NodeChecker()
    nc.start()

    def until(cond) -> None:  # the states are forced by the test, not hoped for: wait for each
        end = time.monotonic() + 60
        while not cond():
            assert time.monotonic() < end
            time.sleep(0.001)

    try:
        replies: list[dict] = []

        def one(k: int) -> None:
            replies.append(nc.check(COMPONENT % k, True, 5, time.monotonic() + 60))

        for k in range(3):  # one at a time: nobody to wait for, so nobody waits
            one(k)
        assert nc.lingered == 0 and nc.largest_batch == 1
        with nc._lock:  # Node held busy: the second check surely arrives while the first is being sent
            ahead = threading.Thread(target=one, args=(3,))
            ahead.start()
            until(lambda: nc._sending)
            behind = threading.Thread(target=one, args=(4,))
            behind.start()
            until(lambda: len(nc._waiting) == 1)
        ahead.join()
        behind.join()
        lingered = nc.lingered
        first = threading.Thread(target=one, args=(1,))  # now bursts are expected: the next lone check waits
        first.start()
        until(lambda: nc.lingered == lingered + 1)  # the first lingers; the second arrives meanwhile
        one(2)
        first.join()
        assert nc.lingered == lingered + 1 and nc.largest_batch == 2
        assert [r["n_type_errors"] for r in replies] == [0] * 7 and all(r["component"] for r in replies)
    finally:
        nc.close()


def test_the_warm_up_rounds_change_no_answer(monkeypatch):
    """checker.js warms V8 up before `ready` (BOTGRPO_REACT_WARMUP_ROUNDS); only speed may depend on it."""
    codes = [COMPONENT % 1, "export function B() { const n: number = 'x'; return <p>{n}</p>; }",
             "export function C() { return <div><p>open</div>; }", "export function D() { return <Missing />; }"]
    answers = []
    for rounds in ("1", "12"):
        monkeypatch.setenv("BOTGRPO_REACT_WARMUP_ROUNDS", rounds)
        nc = NodeChecker()
        nc.start()
        try:
            answers.append([nc.check(code, True, 5, time.monotonic() + 60) for code in codes])
        finally:
            nc.close()
    assert answers[0] == answers[1]
    assert answers[0][1]["n_type_errors"] == 1 and answers[0][2]["syntax"] is not None
