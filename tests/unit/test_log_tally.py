"""Repeated log lines are summed up: the first of a kind at once, then one count per interval."""

import logging

from botgrpo_rewards.log_tally import LogTally


class _Clock:
    now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_first_line_of_a_kind_is_logged_and_the_rest_counted(caplog):
    clock = _Clock()
    tally = LogTally(logging.getLogger("tally-test"), interval_s=10, clock=clock)
    with caplog.at_level(logging.INFO, logger="tally-test"):
        for i in range(1000):
            tally.note(logging.WARNING, "refused", "refusing connection %d", i)
            tally.note(logging.INFO, "closed", "closing connection %d", i)
        tally.flush()  # the interval has not passed: nothing yet
        assert [r.getMessage() for r in caplog.records] == ["refusing connection 0", "closing connection 0"]
        clock.now = 10.5
        tally.flush()
        tally.note(logging.WARNING, "refused", "refusing connection %d", 1000)  # a new interval: logged at once
        tally.flush(everything=True)
    lines = [r.getMessage() for r in caplog.records]
    assert lines[2:] == ["999 more in the last 10 s: refused", "999 more in the last 10 s: closed", "refusing connection 1000"]
