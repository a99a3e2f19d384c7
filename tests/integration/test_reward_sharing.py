"""Identical requests in flight together are scored once, only by services that declare the hello
capability `deterministic`, and a failed answer is never handed to the copies waiting on it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from botgrpo_cli.reward_client import RewardPool
from botgrpo_rewards.protocol import ScoreRequest

ECHO = [sys.executable, str(Path(__file__).parents[1] / "fixtures" / "echo_service.py")]
DETERMINISTIC_ECHO = [*ECHO, "--deterministic"]
WAIT_S = 20


def req(rid: str, text: str = "abcd", **options) -> ScoreRequest:
    return ScoreRequest(id=rid, completion=text, options=options, deadline_ms=options.pop("deadline_ms", 5000))


def test_identical_requests_in_flight_are_scored_once_with_their_own_ids():
    with RewardPool("echo", command=DETERMINISTIC_ECHO) as pool:
        same = [pool.submit(req(f"r{i}", "same text", sleep_ms=300)) for i in range(5)]
        other = pool.submit(req("other", "other text", sleep_ms=300))
        answers = [f.result(WAIT_S) for f in same]
        assert [a.id for a in answers] == [f"r{i}" for i in range(5)]
        assert {a.status for a in answers} == {"ok"}
        assert len({a.info["calls"] for a in answers}) == 1  # one call of the service answered all five
        assert answers[0].spans == answers[4].spans and answers[0].spans is not answers[4].spans  # copies
        assert other.result(WAIT_S).info["calls"] != answers[0].info["calls"]  # a different request: its own call
        assert pool.stats["shared"] == 4 and pool.stats["sent"] == 6 and pool.stats["ok"] == 6


def test_nothing_is_kept_after_the_answer():
    with RewardPool("echo", command=DETERMINISTIC_ECHO) as pool:
        first = pool.submit(req("a", "same")).result(WAIT_S)
        again = pool.submit(req("b", "same")).result(WAIT_S)
        assert again.info["calls"] == first.info["calls"] + 1 and pool.stats["shared"] == 0


def test_requests_differing_in_any_field_are_not_shared():
    with RewardPool("echo", command=DETERMINISTIC_ECHO) as pool:
        futures = [pool.submit(req("a", "same", sleep_ms=200)), pool.submit(req("b", "same", sleep_ms=200, score=0.1)),
                   pool.submit(ScoreRequest(id="c", completion="same", prompt="p", options={"sleep_ms": 200}))]
        assert len({f.result(WAIT_S).info["calls"] for f in futures}) == 3 and pool.stats["shared"] == 0


def test_services_without_the_capability_score_every_copy():
    with RewardPool("echo", command=ECHO) as pool:
        futures = [pool.submit(req(f"r{i}", "same text", sleep_ms=200)) for i in range(4)]
        assert len({f.result(WAIT_S).info["calls"] for f in futures}) == 4 and pool.stats["shared"] == 0


def test_sharing_can_be_turned_off():
    with RewardPool("echo", command=DETERMINISTIC_ECHO, share_identical=False) as pool:
        futures = [pool.submit(req(f"r{i}", "same text", sleep_ms=200)) for i in range(3)]
        assert len({f.result(WAIT_S).info["calls"] for f in futures}) == 3


def test_a_failure_is_not_passed_on_the_copies_get_their_own_try(tmp_path):
    flag = str(tmp_path / "failed-once")
    with RewardPool("echo", command=DETERMINISTIC_ECHO) as pool:
        futures = [pool.submit(req(f"r{i}", "same", sleep_ms=200, fail_once=flag)) for i in range(3)]
        first, *rest = [f.result(WAIT_S) for f in futures]
        assert first.status == "error" and first.error.type == "echo_failure"
        assert [r.status for r in rest] == ["ok", "ok"]  # re-sent after the failure, scored once together
        assert rest[0].info["calls"] == rest[1].info["calls"] == 2
        assert pool.stats["error"] == 1 and pool.stats["ok"] == 2


def test_a_timeout_is_not_passed_on(tmp_path):
    with RewardPool("echo", command=DETERMINISTIC_ECHO) as pool:
        futures = [pool.submit(req(f"r{i}", "same", sleep_ms=1500, deadline_ms=300)) for i in range(2)]
        answers = [f.result(WAIT_S) for f in futures]
        assert [a.status for a in answers] == ["timeout", "timeout"]
        assert pool.stats["shared"] == 1 and pool.stats["timeout"] == 2  # the copy timed out on its own try


@pytest.mark.parametrize("service,completion,reference", [
    ("math", "The sum is 3 + 4 = 7.\nThe answer is \\boxed{7}.", {"answer": "7"}),
    ("math", "So x = 12, hence \\boxed{13}", {"answer": "12"}),
    ("react", "```tsx\nexport default function App() { const n: number = 'x'; return <p>{n}</p>; }\n```", {}),
])
def test_real_services_declare_it_and_shared_answers_equal_unshared_ones(service, completion, reference):
    requests = [ScoreRequest(id=f"r{i}", completion=completion, reference=reference) for i in range(6)]
    with RewardPool(service) as shared, RewardPool(service, share_identical=False) as unshared:
        a = shared.score(requests)
        b = unshared.score(requests)
        assert shared.stats["shared"] >= 1 and unshared.stats["shared"] == 0
    for x, y in zip(a, b):
        assert (x.id, x.status, x.score, x.spans, x.metrics) == (y.id, y.status, y.score, y.spans, y.metrics)
