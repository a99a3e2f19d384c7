"""The HTTP service as a real process under hostile and careless clients (tests/fixtures/echo_service.py)."""

from __future__ import annotations

import http.client
import json
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from botgrpo_cli.errors import UserError
from botgrpo_cli.reward_client import HttpRewardClient
from botgrpo_rewards.protocol import ScoreRequest

ECHO = [sys.executable, str(Path(__file__).parents[1] / "fixtures" / "echo_service.py")]
TOKEN = "t0ken-for-tests"


class HttpService:
    """An echo service over HTTP; its stderr is collected so tests can check it holds no traceback."""

    def __init__(self, *args: str, env: dict | None = None):
        self.proc = subprocess.Popen(ECHO + ["--http", "127.0.0.1:0", *args], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, env=env)
        self.stderr: list[str] = []
        found = threading.Event()
        self.url = ""

        def pump() -> None:
            for line in self.proc.stderr:
                self.stderr.append(line)
                m = re.search(r"serving echo on (http://\S+)", line)
                if m:
                    self.url = m.group(1)
                    found.set()
        threading.Thread(target=pump, daemon=True).start()
        assert found.wait(20), "server never reported its address"
        self.host, self.port = self.url.removeprefix("http://").rsplit(":", 1)

    def conn(self) -> http.client.HTTPConnection:
        return http.client.HTTPConnection(self.host, int(self.port), timeout=10)

    def close(self) -> str:
        self.proc.send_signal(signal.SIGTERM)
        assert self.proc.wait(20) == 0
        time.sleep(0.1)
        return "".join(self.stderr)


def _post(conn, body: bytes, token: str | None = TOKEN) -> tuple[int, dict]:
    headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {token}"} if token else {})}
    conn.request("POST", "/v1/score", body=body, headers=headers)
    resp = conn.getresponse()
    return resp.status, json.loads(resp.read())


@pytest.fixture(scope="module")
def server():
    s = HttpService("--token", TOKEN, "--http-timeout-s", "1")
    yield s
    log = s.close()
    assert "Traceback" not in log, log


def test_token_is_required_on_every_endpoint(server):
    for path in ("/v1/health", "/v1/info"):
        conn = server.conn()
        conn.request("GET", path)
        assert conn.getresponse().status == 401
    status, body = _post(server.conn(), b'{"id": "a", "completion": "x"}', token="wrong")
    assert status == 401 and body["error"]["type"] == "unauthorized"
    status, body = _post(server.conn(), b'{"id": "a", "completion": "xyz"}')
    assert status == 200 and body["status"] == "ok" and body["metrics"] == {"length": 3.0}
    with pytest.raises(UserError, match="401.*BOTGRPO_REWARD_TOKEN"):
        HttpRewardClient(server.url, token="nope").health()
    got = HttpRewardClient(server.url, token=TOKEN).score([ScoreRequest(id="q", completion="ab")])
    assert got[0].ok and got[0].metrics == {"length": 2.0}


def test_keep_alive_connection_serves_many_requests(server):
    conn = server.conn()
    for i in range(50):
        status, body = _post(conn, json.dumps({"id": i, "completion": "k" * i}).encode())
        assert status == 200 and body["id"] == i and body["metrics"] == {"length": float(i)}


def test_deep_json_and_oversized_bodies_are_answered_not_dropped(server):
    conn = server.conn()
    status, body = _post(conn, b"[" * 100_000 + b"]" * 100_000)
    assert status == 400 and "nested too deep" in body["error"]["message"]
    status, body = _post(conn, b'{"id": "after", "completion": "ok"}')  # same connection still serves
    assert status == 200 and body["id"] == "after"
    big = socket.create_connection((server.host, int(server.port)), timeout=10)  # refused by its header alone
    big.sendall(b"POST /v1/score HTTP/1.1\r\nContent-Length: 9000000\r\nAuthorization: Bearer " + TOKEN.encode()
                + b"\r\n\r\n" + b"x" * 1000)
    answer = big.makefile("rb").read()
    assert answer.startswith(b"HTTP/1.1 413") and b'"too_large"' in answer
    status, body = _post(server.conn(), json.dumps({"id": "d", "completion": "c", "reference": {"a": [[[[1]]]] * 3},
                                                    "options": {"nest": json.loads("[" * 500 + "]" * 500)}}).encode())
    assert status == 200 and body["id"] == "d"


def test_silent_and_vanishing_clients_cost_one_line_each(server):
    idle = socket.create_connection((server.host, int(server.port)))
    half = socket.create_connection((server.host, int(server.port)))
    half.sendall(b"POST /v1/score HTTP/1.1\r\nContent-Length: 100\r\nAuthorization: Bearer " + TOKEN.encode() + b"\r\n\r\n{")
    gone = socket.create_connection((server.host, int(server.port)))
    gone.sendall(b"POST /v1/score HTTP/1.1\r\nContent-Len")
    gone.close()
    idle.settimeout(10)
    assert idle.recv(100) == b""  # closed by the server after --http-timeout-s of silence
    half.settimeout(10)
    assert half.recv(100) == b""  # a body that never arrives does not hold a thread forever
    assert _post(server.conn(), b'{"id": "still", "completion": ""}')[0] == 200


def test_many_simultaneous_connects_are_queued_not_refused(server):
    conns = [socket.create_connection((server.host, int(server.port)), timeout=10) for _ in range(64)]
    request = (b"GET /v1/health HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + TOKEN.encode() + b"\r\n\r\n")
    for c in conns:
        c.sendall(request)
    for c in conns:
        assert c.recv(200).startswith(b"HTTP/1.1 200")
        c.close()


def test_remote_bind_without_token_is_refused_in_one_line():
    proc = subprocess.run(ECHO + ["--http", "0.0.0.0:0"], capture_output=True, text=True, timeout=60,
                          env={**_env(), "BOTGRPO_REWARD_TOKEN": ""})
    assert proc.returncode == 2 and "refusing to serve on 0.0.0.0 without a token" in proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_port_in_use_and_bad_addresses_are_one_line():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = subprocess.run(ECHO + ["--http", f"127.0.0.1:{port}"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and "cannot listen on 127.0.0.1:" in proc.stderr and "Traceback" not in proc.stderr
    for bad in ("::1:8765", "host:port", "1.2.3.4:99999"):
        proc = subprocess.run(ECHO + ["--http", bad], capture_output=True, text=True, timeout=60)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr and proc.stderr.startswith("error: --http")


def test_ipv6_loopback_is_served():
    if not socket.has_ipv6:
        pytest.skip("no IPv6 on this machine")
    try:
        socket.socket(socket.AF_INET6).bind(("::1", 0))
    except OSError:
        pytest.skip("no IPv6 loopback on this machine")
    proc = subprocess.Popen(ECHO + ["--http", "[::1]:0"], stderr=subprocess.PIPE, text=True)
    try:
        line = ""
        for line in proc.stderr:
            if "serving echo on" in line:
                break
        url = re.search(r"(http://\S+)", line).group(1)
        assert url.startswith("http://[::1]:")
        assert HttpRewardClient(url).health()["status"] == "ok"
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(20)


def _env() -> dict:
    import os

    return dict(os.environ)


def test_math_service_under_2000_requests_over_16_keep_alive_connections():
    """The acceptance load test: no errors, every answer right. Its speed (p50) is a benchmark
    figure (`botgrpo bench rewards --service math --http`), not asserted here."""
    from botgrpo_cli.bench.http_load import http_service, load

    with http_service("math", TOKEN) as address:
        result = load(address, TOKEN, 2000, 16)
    assert result.errors == 0 and len(result.latencies_ms) == 2000
