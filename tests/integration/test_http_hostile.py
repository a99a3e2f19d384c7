"""The HTTP service against clients without the token and clients that flood it (issue 26), on 127.0.0.1.

Every hostile loop is bounded; assertions compare orders and ratios, never absolute timings, so they
hold on a loaded two-core machine."""

from __future__ import annotations

import http.client
import json
import logging
import socket
import sys
import threading
import time
from pathlib import Path

import pytest

from botgrpo_rewards.http_routes import MAX_BATCH
from botgrpo_rewards.http_server import HttpSettings, bind
from botgrpo_rewards.service import ServiceRunner

sys.path.insert(0, str(Path(__file__).parents[1] / "fixtures"))
from echo_service import EchoBackend  # noqa: E402

TOKEN = "t0ken-for-hostile-tests"


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@pytest.fixture
def serve():
    """Start an echo service over HTTP in this process with the given settings; its log lines are kept."""
    started = []
    records = _Records()
    logger = logging.getLogger("botgrpo_rewards")
    logger.addHandler(records)
    old_level = logger.level
    logger.setLevel(logging.INFO)

    def start(**settings):
        runner = ServiceRunner(EchoBackend())
        runner.start()
        server = bind(runner, "127.0.0.1", 0, HttpSettings(token=TOKEN, **settings))
        thread = threading.Thread(target=server.serve, daemon=True)
        thread.start()
        started.append((server, thread, runner))
        server.records = records
        return server

    yield start
    logger.removeHandler(records)
    logger.setLevel(old_level)
    for server, thread, runner in started:
        server.stop()
        thread.join(10)
        assert not thread.is_alive()
        server.sock.close()
        runner.close()
    assert not any("Traceback" in line for line in records.lines)


def _post(host: str, port: int, payload, timeout: float = 30) -> tuple[int, dict]:
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        conn.request("POST", "/v1/score", body=json.dumps(payload).encode(),
                     headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"})
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read())
    finally:
        conn.close()


def _closed_within(sock: socket.socket, seconds: float) -> bool:
    sock.settimeout(seconds)
    try:
        return sock.recv(100) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def _read_until_closed(sock: socket.socket, seconds: float) -> bytes:
    sock.settimeout(seconds)
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return data


def test_600_idle_sockets_without_the_token_do_not_lock_out_a_client_with_it(serve):
    server = serve(timeout_s=60, header_timeout_s=60)  # no early close here: room is made at the caps alone
    host, port = server.address
    idle = []
    try:
        for k in range(600):
            idle.append(socket.create_connection((host, port), timeout=10))
            if k % 3 == 0:
                idle[-1].sendall(b"POST /v1/score HTTP/1.1\r\nContent-Len")  # a head that never ends
        for k in range(5):
            status, body = _post(host, port, {"id": f"real-{k}", "completion": "abc"}, timeout=20)
            assert status == 200 and body["status"] == "ok"
        assert len(server.conns) <= server.settings.max_untrusted_per_peer + 1
        for _ in range(300):  # a client that keeps reconnecting costs no log line per socket
            socket.create_connection((host, port), timeout=10).close()
        status, _ = _post(host, port, {"id": "after-the-flood", "completion": ""}, timeout=20)
        assert status == 200
    finally:
        for s in idle:
            s.close()
    assert len(server.records.lines) < 10, server.records.lines
    assert any("to make room" in line for line in server.records.lines)


def test_a_socket_that_sends_no_admitted_request_is_closed_early_and_a_trusted_one_is_not(serve):
    server = serve(timeout_s=60, header_timeout_s=0.5)
    host, port = server.address
    silent = socket.create_connection((host, port), timeout=10)
    wrong_token = socket.create_connection((host, port), timeout=10)
    trusted = socket.create_connection((host, port), timeout=10)
    request = (b"GET /v1/health HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + TOKEN.encode() + b"\r\n\r\n")
    trusted.sendall(request)
    assert trusted.recv(200).startswith(b"HTTP/1.1 200")
    wrong_token.sendall(b"GET /v1/health HTTP/1.1\r\nAuthorization: Bearer nope\r\n\r\n")
    assert _read_until_closed(wrong_token, 10).startswith(b"HTTP/1.1 401")  # answered, then closed
    assert _closed_within(silent, 10)  # at header_timeout_s, long before timeout_s
    trusted.settimeout(10)
    trusted.sendall(request)  # idle longer than header_timeout_s, and still open: it showed its token
    assert trusted.recv(200).startswith(b"HTTP/1.1 200")
    for s in (silent, wrong_token, trusted):
        s.close()
    assert any("with no admitted request" in line for line in server.records.lines)


def test_a_post_over_the_batch_cap_is_refused_whole(serve):
    server = serve()
    host, port = server.address
    status, body = _post(host, port, {"requests": [{"id": i, "completion": ""} for i in range(MAX_BATCH + 1)]})
    assert status == 413 and body["error"]["type"] == "too_large" and f"at most {MAX_BATCH}" in body["error"]["message"]
    assert server.runner.backend._calls == 0  # nothing of it was scored
    status, body = _post(host, port, {"requests": [{"id": i, "completion": ""} for i in range(MAX_BATCH)]})
    assert status == 200 and len(body["responses"]) == MAX_BATCH


def test_a_huge_batch_does_not_make_a_small_request_wait_behind_it(serve):
    server = serve()
    host, port = server.address
    backend = server.runner.backend
    big_done: list[float] = []

    def big() -> None:
        reqs = [{"id": i, "completion": "x", "options": {"sleep_ms": 2}} for i in range(MAX_BATCH)]
        status, body = _post(host, port, {"requests": reqs}, timeout=300)
        assert status == 200 and len(body["responses"]) == MAX_BATCH
        big_done.append(time.monotonic())

    started = time.monotonic()
    thread = threading.Thread(target=big)
    thread.start()
    deadline = time.monotonic() + 120
    while backend._calls < 200 and time.monotonic() < deadline:  # the big batch is being scored
        time.sleep(0.01)
    asked = time.monotonic()
    status, body = _post(host, port, {"id": "small", "completion": "y"})
    small_done = time.monotonic()
    thread.join(300)
    assert status == 200 and body["id"] == "small" and big_done
    assert small_done < big_done[0]  # answered while the big batch is still being scored...
    assert small_done - asked < (big_done[0] - started) / 4  # ...and not after waiting behind most of it
