"""HttpRewardClient against the real HTTP service (tests/fixtures/echo_service.py): keep-alive
connections from a small pool, reopened when the server has closed one."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from botgrpo_cli.errors import UserError
from botgrpo_cli.reward_client import HttpRewardClient
from botgrpo_rewards.protocol import ScoreRequest
from test_http_hardening import TOKEN, HttpService


@pytest.fixture
def connects(monkeypatch):
    """Counts the TCP connections opened (http.client connects through socket.create_connection)."""
    opened: list[tuple] = []
    real = socket.create_connection

    def counting(address, *args, **kwargs):
        opened.append(address)
        return real(address, *args, **kwargs)

    monkeypatch.setattr(socket, "create_connection", counting)
    return opened


@pytest.fixture(scope="module")
def server():
    s = HttpService("--token", TOKEN, "--http-timeout-s", "1", "--max-body-bytes", "2000")
    yield s
    log = s.close()
    assert "Traceback" not in log, log


def _requests(n: int, tag: str = "r") -> list[ScoreRequest]:
    return [ScoreRequest(id=f"{tag}{i}", completion="x" * i) for i in range(n)]


def test_many_calls_share_one_keep_alive_connection(server, connects):
    client = HttpRewardClient(server.url, token=TOKEN, batch_size=2)
    assert client.health()["status"] == "ok" and client.info().service == "echo"
    got = client.score(_requests(20))  # 10 POSTs
    assert [r.metrics["length"] for r in got] == [float(i) for i in range(20)]
    assert len(connects) == 1
    client.close()


def test_a_connection_the_server_closed_when_idle_is_reopened_once(server, connects):
    client = HttpRewardClient(server.url, token=TOKEN)
    assert client.health()["status"] == "ok"
    time.sleep(1.8)  # past --http-timeout-s: the server closes the idle connection
    assert any("silent" in line for line in server.stderr)
    got = client.score(_requests(3))
    assert all(r.ok for r in got) and len(connects) == 2
    assert client.health()["status"] == "ok" and len(connects) == 2  # and the new one is kept


def test_an_answer_that_closes_the_connection_leaves_the_client_usable(server, connects):
    client = HttpRewardClient(server.url, token=TOKEN, batch_size=64)
    with pytest.raises(UserError, match="HTTP 413"):  # over --max-body-bytes: answered, then closed
        client.score([ScoreRequest(id="big", completion="y" * 5000)])
    got = client.score(_requests(2))
    assert all(r.ok for r in got) and len(connects) == 2


def test_threads_each_take_their_own_connection_from_the_pool(server, connects):
    client = HttpRewardClient(server.url, token=TOKEN, batch_size=1)
    results: list[list] = []
    errors: list[BaseException] = []

    def work(k: int) -> None:
        try:
            results.append(client.score(_requests(10, tag=f"t{k}-")))
        except BaseException as err:  # surfaced below, with the thread's error
            errors.append(err)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors and len(results) == 6
    assert all(r.ok and r.metrics["length"] == float(r.id.split("-")[1]) for got in results for r in got)
    assert 1 <= len(connects) <= 6  # at most one per thread, reused across its 10 calls
    client.close()


def test_a_server_that_went_away_is_one_clear_error_not_a_retry_loop(connects):
    s = HttpService("--token", TOKEN)
    client = HttpRewardClient(s.url, token=TOKEN)
    assert client.health()["status"] == "ok"
    s.close()
    start = time.monotonic()
    with pytest.raises(UserError, match="cannot reach the reward service"):
        client.score(_requests(1))
    # the stale connection, then one fresh try (the time bound only catches a retry loop, with room for a busy machine)
    assert len(connects) == 2 and time.monotonic() - start < 60


@pytest.mark.parametrize("url", ["localhost:8100", "http://", "http://127.0.0.1:notaport", "ftp://h:1"])
def test_a_malformed_url_is_one_line_at_construction(url):
    with pytest.raises(UserError, match="is not http://HOST:PORT"):
        HttpRewardClient(url)
