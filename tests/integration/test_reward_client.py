"""RewardPool and `botgrpo reward score` against real echo service processes."""

from __future__ import annotations

import json
import os
import signal
import sys
from concurrent.futures import FIRST_COMPLETED, wait
from pathlib import Path

import pytest
from typer.testing import CliRunner

from botgrpo_cli.cli import app
from botgrpo_cli.errors import UserError
from botgrpo_cli.reward_client import RewardPool, ServiceStartError
from botgrpo_rewards import protocol
from botgrpo_rewards.protocol import ScoreRequest

ECHO = [sys.executable, str(Path(__file__).parents[1] / "fixtures" / "echo_service.py")]
WAIT_S = 20  # generous bound on futures: a hang fails the test instead of the suite


def req(rid: str, text: str = "abcd", **options) -> ScoreRequest:
    deadline_ms = options.pop("deadline_ms", 5000)
    return ScoreRequest(id=rid, completion=text, options=options, deadline_ms=deadline_ms)


def test_pipelined_responses_are_matched_by_id_and_caller_ids_restored():
    with RewardPool("echo", command=ECHO) as pool:
        slow = pool.submit(req("dup", "slow one", sleep_ms=400))
        fast = pool.submit(req("dup", "fast"))  # same caller id: internal ids keep them apart
        done, _ = wait([slow, fast], timeout=WAIT_S, return_when=FIRST_COMPLETED)
        assert done == {fast}  # answered out of order
        assert fast.result().info["echo"] == "fast" and fast.result().id == "dup"
        assert slow.result(WAIT_S).info["echo"] == "slow one" and slow.result().id == "dup"
        assert pool.stats == {"sent": 2, "ok": 2, "error": 0, "timeout": 0, "restarts": 0, "resent": 0,
                              "shared": 0, "stray_answers": 0}


def test_score_keeps_input_order_and_reports_progress_and_errors():
    seen = []
    with RewardPool("echo", workers=2, command=ECHO) as pool:
        reqs = [req(f"r{i}", "x" * (i + 1), sleep_ms=(5 - i) * 20) for i in range(5)]
        reqs.append(ScoreRequest(id="bad", completion="x", options={"raise": True}))
        out = pool.score(reqs, progress=seen.append)
        assert [r.id for r in out] == [r.id for r in reqs]
        assert [r.metrics.get("length") for r in out[:5]] == [1.0, 2.0, 3.0, 4.0, 5.0]
        assert out[5].status == "error" and out[5].error.type == "backend"
        assert len(seen) == 6
        assert pool.stats["ok"] == 5 and pool.stats["error"] == 1


def test_service_side_deadline_times_out_one_while_others_complete():
    with RewardPool("echo", command=ECHO) as pool:
        out = pool.score([req("slow", sleep_ms=30_000, deadline_ms=200), req("a"), req("b")])
        assert [r.status for r in out] == ["timeout", "ok", "ok"]
        assert pool.stats["restarts"] == 0  # the service answered the timeout itself


def test_workers_run_in_parallel_processes():
    with RewardPool("echo", workers=3, command=ECHO) as pool:
        assert len(set(pool.pids)) == 3
        out = pool.score([req(f"r{i}", sleep_ms=50) for i in range(12)])
        assert all(r.ok for r in out)
        assert {r.info["pid"] for r in out} == set(pool.pids)  # spread over every worker


def test_pool_never_sends_a_worker_more_than_max_inflight():
    with RewardPool("echo", command=ECHO, max_inflight=2) as pool:  # the service itself takes 8
        out = pool.score([req(f"r{i}", sleep_ms=60) for i in range(8)])
        assert max(r.info["concurrent"] for r in out) <= 2
    with RewardPool("echo", command=ECHO + ["--max-inflight", "3"]) as pool:  # its hello says 3
        assert pool.hello.max_inflight == 3
        assert all(r.ok for r in pool.score([req(f"r{i}") for i in range(9)]))


def test_kill_9_mid_batch_loses_nothing():
    with RewardPool("echo", workers=2, command=ECHO, max_inflight=2) as pool:
        futures = [pool.submit(req(f"r{i}", f"text {i}", sleep_ms=100)) for i in range(20)]
        wait(futures, timeout=WAIT_S, return_when=FIRST_COMPLETED)
        victim = pool.pids[0]
        os.kill(victim, signal.SIGKILL)  # the queue is still long: this worker has 2 in flight
        out = [f.result(WAIT_S) for f in futures]
        assert [r.status for r in out] == ["ok"] * 20
        assert [r.info["echo"] for r in out] == [f"text {i}" for i in range(20)]
        assert pool.stats["restarts"] >= 1 and pool.stats["resent"] >= 1
        assert victim not in pool.pids


def test_request_that_kills_its_service_twice_gets_an_error_and_others_survive():
    with RewardPool("echo", workers=2, command=ECHO) as pool:
        out = pool.score([req("poison", crash=1)] + [req(f"r{i}", sleep_ms=20) for i in range(6)])
        assert out[0].status == "error" and out[0].error.type == "service_died"
        assert all(r.ok for r in out[1:])
        assert pool.stats["restarts"] == 2


def test_hung_service_is_killed_and_the_late_request_times_out():
    with RewardPool("echo", workers=2, command=ECHO, hang_timeout_s=0.2) as pool:
        reqs = [req("hang", hang=1, deadline_ms=300)] + [req(f"r{i}", sleep_ms=20) for i in range(6)]
        out = pool.score(reqs)
        assert out[0].status == "timeout" and "hung" in out[0].error.message
        assert all(r.ok for r in out[1:])  # innocent bystanders were re-sent and scored
        assert pool.stats["restarts"] == 2 and pool.stats["timeout"] == 1


def test_service_that_fails_to_start_names_itself_and_shows_stderr():
    with pytest.raises(ServiceStartError) as err:
        RewardPool("echo", command=ECHO + ["--fail-start"], startup_timeout_s=20)
    assert "'echo'" in str(err.value) and "widget is missing" in str(err.value)
    assert ServiceStartError is protocol.ServiceStartError  # one class, client and service side; the CLI prints it
    with pytest.raises(ServiceStartError, match="could not run"):
        RewardPool("ghost", command=["/nonexistent/reward-service"])


def test_service_that_cannot_restart_answers_everything_with_an_error(tmp_path):
    broken = tmp_path / "broken"
    with RewardPool("echo", command=ECHO + ["--fail-start-if", str(broken)], startup_timeout_s=20) as pool:
        assert pool.score([req("first")])[0].ok
        broken.touch()  # from now on the service cannot start again
        out = pool.score([req("crash", crash=1), req("queued")])
        assert [r.status for r in out] == ["error", "error"]
        assert all(r.error.type == "service_died" and "widget is missing" in r.error.message for r in out)
        late = pool.submit(req("after")).result(WAIT_S)  # nothing waits forever once no process can run
        assert late.status == "error" and late.error.type == "service_died"


def test_closed_pool_refuses_new_work():
    pool = RewardPool("echo", command=ECHO)
    pids = pool.pids
    pool.close()
    with pytest.raises(RuntimeError):
        pool.submit(req("late"))
    assert all(pid is None for pid in pool.pids) and all(pids)


def test_reward_score_cli_keeps_a_malformed_line_with_its_number(tmp_path):
    rollouts = tmp_path / "roll.jsonl"
    rollouts.write_text(
        "\n".join(
            [
                json.dumps({"id": "a", "prompt": "p", "completion": "hello", "reference": {}}),
                '{"id": "broken", "prompt": ',
                json.dumps({"id": "c", "prompt": "p", "completion": "xy", "reference": {}, "options": {"score": -0.25}}),
                json.dumps({"id": "d", "prompt": "p", "reference": {}}),
            ]
        )
        + "\n"
    )
    command = " ".join(ECHO)
    result = CliRunner().invoke(app, ["reward", "score", str(rollouts), "--service", "echo", "--command", command, "--workers", "2"])
    assert result.exit_code == 0, result.output
    assert "line 2:" in result.output and "invalid JSON" in result.output
    assert "line 4:" in result.output and "completion" in result.output
    rows = [json.loads(line) for line in (tmp_path / "roll.scored.jsonl").read_text().splitlines()]
    assert [r["status"] for r in rows] == ["ok", "error", "ok", "error"]
    assert rows[0]["id"] == "a" and rows[0]["score"] == 0.5 and rows[0]["spans"][0]["end"] == 3
    assert rows[1]["raw"] == '{"id": "broken", "prompt": ' and rows[1]["line"] == 2 and rows[1]["score"] is None
    assert rows[2]["score"] == -0.25 and rows[3]["id"] == "d"
    assert "mean score" in result.output and "restarts" in result.output


def test_reward_score_cli_unknown_service_lists_known_ones(tmp_path):
    (tmp_path / "r.jsonl").write_text('{"id":"a","completion":"x"}\n')
    result = CliRunner().invoke(app, ["reward", "score", str(tmp_path / "r.jsonl"), "--service", "nope"])
    assert isinstance(result.exception, UserError)
    assert "math" in str(result.exception) and "react" in str(result.exception)


def test_a_service_that_keeps_answering_late_is_not_called_hung():
    # each answer comes 150 ms after the last, so the sixth is 0.9 s after it was sent, past its
    # deadline + grace (0.5 s) by the send clock; but the service never went silent that long
    late = [sys.executable, str(Path(__file__).parents[1] / "fixtures" / "late_service.py")]
    with RewardPool("late", command=late, hang_timeout_s=0.2) as pool:
        out = pool.score([req(f"r{i}", deadline_ms=300) for i in range(6)])
        assert [r.status for r in out] == ["ok"] * 6
        assert pool.stats["restarts"] == 0
