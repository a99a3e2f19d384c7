"""RemotePool (`reward.url`) against real HTTP services (the echo fixture): spreading, an
endpoint that dies, none left, and a refused token, each answered, never waited on forever."""

from __future__ import annotations

import pytest

from botgrpo_cli.errors import UserError
from botgrpo_cli.reward_client.remote import RemotePool
from botgrpo_rewards.protocol import ScoreRequest
from test_http_hardening import TOKEN, HttpService


def _requests(n: int) -> list[ScoreRequest]:
    return [ScoreRequest(id=f"r{i}", completion="x" * i) for i in range(n)]


def test_requests_spread_and_a_dead_endpoints_share_is_resent():
    a, b = HttpService("--token", TOKEN), HttpService("--token", TOKEN)
    pool = RemotePool([a.url, b.url], token=TOKEN)
    try:
        assert all(r.ok for r in pool.score(_requests(40)))
        a.proc.kill()
        a.proc.wait(10)
        got = pool.score(_requests(40))
        assert [r.metrics["length"] for r in got] == [float(i) for i in range(40)]  # all, in order, none lost
        stats = pool.stats
        assert stats["endpoint_failures"] >= 1 and stats["resent"] >= 1 and stats["ok"] == 80
    finally:
        pool.close()
        b.close()


def test_with_every_endpoint_gone_requests_are_answered_service_died():
    a = HttpService("--token", TOKEN)
    pool = RemotePool([a.url], token=TOKEN, max_tries=2)
    try:
        a.proc.kill()
        a.proc.wait(10)
        (resp,) = pool.score(_requests(1))
        assert resp.status == "error" and resp.error.type == "service_died" and "2 tries" in resp.error.message
    finally:
        pool.close()


def test_a_wrong_token_is_refused_at_start_with_what_to_set():
    a = HttpService("--token", TOKEN)
    try:
        with pytest.raises(UserError, match="HTTP 401.*BOTGRPO_REWARD_TOKEN"):
            RemotePool([a.url], token="wrong")
    finally:
        a.close()


def test_reward_score_url_scores_a_file_on_a_running_service(tmp_path, monkeypatch):
    import json

    from typer.testing import CliRunner

    from botgrpo_cli.cli import app

    a = HttpService("--token", TOKEN)
    try:
        monkeypatch.setenv("BOTGRPO_REWARD_TOKEN", TOKEN)
        rollouts = tmp_path / "r.jsonl"
        rollouts.write_text("".join(json.dumps({"id": f"r{i}", "completion": "x" * i}) + "\n" for i in range(5)))
        result = CliRunner().invoke(app, ["reward", "score", str(rollouts), "--url", a.url, "-o", str(tmp_path / "o.jsonl")])
        assert result.exit_code == 0, result.output
        rows = [json.loads(line) for line in (tmp_path / "o.jsonl").read_text().splitlines()]
        assert [r["metrics"]["length"] for r in rows] == [0.0, 1.0, 2.0, 3.0, 4.0]
    finally:
        a.close()
