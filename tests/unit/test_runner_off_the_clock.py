"""A backend's own queue is off the request's clock (service.off_the_clock); its work is not."""

from __future__ import annotations

import threading
import time

from botgrpo_rewards.backend import Backend, ScoreResult
from botgrpo_rewards.protocol import ScoreRequest
from botgrpo_rewards.service import ServiceRunner, current_deadline, off_the_clock


class OneDesk(Backend):
    """Requests queue for one desk (off the clock), then work `work_s` at it (on the clock)."""

    name = "desk"
    max_inflight = 8

    def __init__(self, work_s: float):
        self.work_s = work_s
        self.desk = threading.Lock()
        self.deadlines: list[tuple[float, float]] = []  # (given, as moved by the queue)

    def score(self, request: ScoreRequest, deadline: float) -> ScoreResult:
        with off_the_clock():
            self.desk.acquire()
        try:
            self.deadlines.append((deadline, current_deadline(deadline)))
            time.sleep(self.work_s)
        finally:
            self.desk.release()
        return ScoreResult(score=1.0)


def _score_all(backend: Backend, n: int, deadline_ms: int) -> list[str]:
    runner = ServiceRunner(backend)
    runner.start()
    try:
        answers: list[str] = []
        done = threading.Event()

        def reply(resp) -> None:
            answers.append(resp.status)
            if len(answers) == n:
                done.set()

        for i in range(n):
            runner.submit(ScoreRequest(id=i, completion="x", deadline_ms=deadline_ms), reply)
        assert done.wait(60)
        return answers
    finally:
        runner.close()


def test_a_queue_longer_than_the_deadline_causes_no_timeout():
    backend = OneDesk(work_s=0.1)
    assert _score_all(backend, 8, deadline_ms=500) == ["ok"] * 8  # the last waits 0.7 s, over its 0.5 s
    moved = [later - given for given, later in backend.deadlines]
    assert max(moved) > 0.5 and all(m >= 0 for m in moved)


def test_work_past_the_deadline_is_still_a_timeout():
    assert _score_all(OneDesk(work_s=0.6), 1, deadline_ms=200) == ["timeout"]


def test_off_the_clock_outside_a_runner_thread_does_nothing():
    with off_the_clock():
        pass
    assert current_deadline(12.5) == 12.5
