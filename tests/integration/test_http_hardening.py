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


def _answer(sock: socket.socket) -> tuple[bytes, dict | None]:
    """One whole HTTP answer from a raw socket: (head, JSON body); (b"", None) when the server closed.
    Reads through the socket's buffered file, so pipelined answers arriving together are kept apart."""
    reader = _readers.setdefault(sock, sock.makefile("rb"))
    lines = []
    while not lines or lines[-1] not in (b"\r\n", b""):
        lines.append(reader.readline())
    head = b"".join(lines).strip()
    if not head:
        return b"", None
    length = int(re.search(rb"Content-Length: (\d+)", head).group(1))
    body = reader.read(length)
    assert len(body) == length
    return head, json.loads(body)


_readers: dict[socket.socket, object] = {}


def _closed_within(sock: socket.socket, seconds: float) -> bool:
    sock.settimeout(seconds)
    try:
        return sock.recv(100) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def _score_head(length: int) -> bytes:
    return (b"POST /v1/score HTTP/1.1\r\nAuthorization: Bearer " + TOKEN.encode()
            + b"\r\nContent-Length: " + str(length).encode() + b"\r\n\r\n")


def test_a_request_trickled_one_byte_at_a_time_is_cut_off_at_the_timeout(server):
    """--http-timeout-s (1 s here) is a deadline for the whole request from its first byte, not per
    receive: bytes every 0.3 s never reach the end of the head, and the server closes anyway."""
    head, body = _score_head(20), b'{"id": 1, "completion": ""}'
    for what, payload in (("head", head), ("body", head + body)):
        sock = socket.create_connection((server.host, int(server.port)), timeout=10)
        start = time.monotonic()
        closed = False
        for k in range(len(payload) if what == "head" else len(head) + 5):
            try:
                sock.sendall(payload[k:k + 1])
            except (BrokenPipeError, ConnectionResetError):
                closed = True
                break
            if _closed_within(sock, 0.3):
                closed = True
                break
        took = time.monotonic() - start
        assert closed and took > 0.9, (what, took)  # never before the 1 s deadline
        assert took < 15, (what, took)  # and it ended: a per-receive timeout would trickle on for ~27 s (the whole payload)
        sock.close()
    assert any("request head incomplete" in line for line in server.stderr)
    assert any("request body incomplete" in line for line in server.stderr)
    assert _post(server.conn(), b'{"id": "after", "completion": ""}')[0] == 200


def test_pipelined_requests_are_answered_in_order_on_one_connection(server):
    bodies = [json.dumps({"id": i, "completion": "p" * i}).encode() for i in range(5)]
    sock = socket.create_connection((server.host, int(server.port)), timeout=10)
    sock.sendall(b"\r\n" + b"".join(_score_head(len(b)) + b for b in bodies))  # a blank line before is allowed
    for i in range(5):
        head, body = _answer(sock)
        assert head.startswith(b"HTTP/1.1 200 OK") and body["id"] == i and body["metrics"] == {"length": float(i)}
    sock.close()


def test_http_1_0_closes_unless_asked_to_keep_alive(server):
    get = b"GET /v1/health HTTP/1.0\r\nAuthorization: Bearer " + TOKEN.encode() + b"\r\n"
    sock = socket.create_connection((server.host, int(server.port)), timeout=10)
    sock.sendall(get + b"\r\n")
    head, body = _answer(sock)
    assert b"Connection: close" in head and body["status"] == "ok" and _closed_within(sock, 5)
    sock = socket.create_connection((server.host, int(server.port)), timeout=10)
    for _ in range(2):
        sock.sendall(get + b"Connection: keep-alive\r\n\r\n")
        head, body = _answer(sock)
        assert b"Connection: keep-alive" in head and body["status"] == "ok"
    sock.close()


@pytest.mark.parametrize("request_bytes, code", [
    (b"GARBAGE\r\n\r\n", b"400"),
    (b"POST /v1/score HTTP/2.0\r\n\r\n", b"505"),
    (b"PUT /v1/score HTTP/1.1\r\nAuthorization: Bearer " + TOKEN.encode() + b"\r\n\r\n", b"501"),
    (b"POST /v1/score HTTP/1.1\r\nAuthorization: Bearer " + TOKEN.encode() + b"\r\nContent-Length: \xb2\r\n\r\n", b"400"),
    (b"POST /v1/score HTTP/1.1\r\nAuthorization: Bearer " + TOKEN.encode() + b"\r\nContent-Length: 2\r\n"
     b"Content-Length: 30\r\n\r\n{}", b"400"),
    (b"POST /v1/score HTTP/1.1\r\nAuthorization: Bearer " + TOKEN.encode() + b"\r\nTransfer-Encoding: chunked\r\n\r\n"
     b"2\r\n{}\r\n0\r\n\r\n", b"411"),
    (b"POST /v1/score HTTP/1.1\r\n folded: header\r\n\r\n", b"400"),
    (b"GET /v1/health HTTP/1.1\r\nX-Big: " + b"a" * 70_000 + b"\r\n\r\n", b"431"),
    (b"POST /v2/score HTTP/1.1\r\nAuthorization: Bearer " + TOKEN.encode() + b"\r\nContent-Length: 2\r\n\r\n{}", b"404"),
])
def test_malformed_requests_get_one_json_answer_and_a_closed_connection(server, request_bytes, code):
    sock = socket.create_connection((server.host, int(server.port)), timeout=10)
    sock.sendall(request_bytes)
    head, body = _answer(sock)
    assert head.startswith(b"HTTP/1.1 " + code) and b"Connection: close" in head
    assert body["status"] == "error" and body["error"]["message"]
    assert _closed_within(sock, 5)


def test_expect_100_continue_is_honoured(server):
    body = b'{"id": "c", "completion": "abcd"}'
    sock = socket.create_connection((server.host, int(server.port)), timeout=10)
    sock.sendall(_score_head(len(body))[:-2] + b"Expect: 100-continue\r\n\r\n")
    assert sock.recv(100) == b"HTTP/1.1 100 Continue\r\n\r\n"
    sock.sendall(body)
    head, answer = _answer(sock)
    assert head.startswith(b"HTTP/1.1 200") and answer["metrics"] == {"length": 4.0}


def test_a_client_leaving_while_scored_costs_nothing(server):
    sock = socket.create_connection((server.host, int(server.port)), timeout=10)
    body = b'{"id": "gone", "completion": "x", "options": {"sleep_ms": 300}}'
    sock.sendall(_score_head(len(body)) + body)
    sock.close()
    time.sleep(0.6)  # the answer comes after the client left
    assert _post(server.conn(), b'{"id": "next", "completion": ""}')[0] == 200
    assert not [line for line in server.stderr if "Traceback" in line or "exception" in line.lower()]


@pytest.fixture
def echo_in_process():
    """An HttpServer on this process's own thread around the echo backend, with a cap of 3 connections."""
    sys.path.insert(0, str(Path(__file__).parents[1] / "fixtures"))
    from echo_service import EchoBackend

    from botgrpo_rewards.http_server import HttpSettings, bind
    from botgrpo_rewards.service import ServiceRunner

    runner = ServiceRunner(EchoBackend())
    runner.start()
    server = bind(runner, "127.0.0.1", 0, HttpSettings(token=TOKEN, max_connections=3, timeout_s=5))
    thread = threading.Thread(target=server.serve, daemon=True)
    thread.start()
    yield server
    server.stop()
    thread.join(10)
    assert not thread.is_alive()
    server.sock.close()
    runner.close()


def test_connections_over_the_cap_are_closed_and_a_freed_slot_is_reused(echo_in_process):
    host, port = echo_in_process.address
    conns = [http.client.HTTPConnection(host, port, timeout=10) for _ in range(3)]
    for c in conns:
        assert _post(c, b'{"id": "in", "completion": ""}')[0] == 200
    extra = socket.create_connection((host, port), timeout=10)
    assert _closed_within(extra, 5)  # refused at once: the 4th connection gets no thread, no answer
    conns[0].close()
    deadline = time.monotonic() + 5
    while len(echo_in_process.conns) > 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    again = http.client.HTTPConnection(host, port, timeout=10)
    assert _post(again, b'{"id": "freed", "completion": ""}')[0] == 200
    for c in (*conns[1:], again):
        c.close()


def test_bench_rewards_http_prints_every_setup_with_no_errors():
    from typer.testing import CliRunner

    from botgrpo_cli.cli import app

    result = CliRunner().invoke(app, ["bench", "rewards", "--service", "math", "--http", "--n", "64"])
    assert result.exit_code == 0, result.output
    rows = {line.split("│")[1].strip(): line for line in result.output.splitlines() if line.count("│") == 6}
    assert {"1 keep-alive", "16 keep-alive", "1, new connection each"} <= set(rows), result.output
    assert all(rows[k].split("│")[5].strip() == "0" for k in ("1 keep-alive", "16 keep-alive", "1, new connection each"))
    assert "16 vs 1 keep-alive connections" in result.output


def test_a_client_that_never_reads_its_answers_is_closed_after_the_timeout(server):
    """Answers pile up unread (a small receive buffer, big batch answers): once the server's own
    write buffer is full it waits --http-timeout-s, then closes the connection (one line)."""
    batch = json.dumps({"requests": [{"id": i, "completion": "r" * 30} for i in range(500)]}).encode()
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect((server.host, int(server.port)))

    def send() -> None:  # blocks once the server stops reading; ends when the server closes
        try:
            sock.sendall((_score_head(len(batch)) + batch) * 60)
        except OSError:
            pass
    threading.Thread(target=send, daemon=True).start()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not any("not reading its answers" in line for line in server.stderr):
        time.sleep(0.1)
    assert any("not reading its answers" in line for line in server.stderr)
    sock.close()
    assert _post(server.conn(), b'{"id": "others", "completion": ""}')[0] == 200


def test_a_timeout_of_zero_is_one_line():
    proc = subprocess.run(ECHO + ["--http", "127.0.0.1:0", "--http-timeout-s", "0"], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 2 and "--http-timeout-s must be more than 0" in proc.stderr and "Traceback" not in proc.stderr


def test_real_clients_curl_and_node_fetch_are_served_over_kept_alive_connections(server, tmp_path):
    """curl (asked for `Expect: 100-continue`, which it sends by itself for large bodies) reuses its
    connection across the URLs of one command; Node's fetch (undici) keeps its connections alive and
    writes lower-case headers."""
    import shutil

    if not shutil.which("curl") or not shutil.which("node"):
        pytest.skip("needs curl and node")
    body = tmp_path / "req.json"
    body.write_text(json.dumps({"id": "curl", "completion": "c" * 2000}))
    url = f"{server.url}/v1/score"
    proc = subprocess.run(["curl", "-sSv", "-H", f"Authorization: Bearer {TOKEN}", "-H", "Content-Type: application/json",
                           "-H", "Expect: 100-continue", "--data-binary", f"@{body}", "-w", "\n%{http_code} %{num_connects}\n", url, url],
                          capture_output=True, text=True, timeout=60)
    lines = proc.stdout.splitlines()
    assert proc.returncode == 0 and lines[1] == "200 1" and lines[3] == "200 0", proc.stdout + proc.stderr
    assert json.loads(lines[0])["metrics"] == {"length": 2000.0} and json.loads(lines[2])["id"] == "curl"
    assert "> Expect: 100-continue" in proc.stderr and "< HTTP/1.1 100 Continue" in proc.stderr  # not curl's 1 s wait
    script = """
    const [url, token] = process.argv.slice(1);
    (async () => {
      const ids = [];
      for (let i = 0; i < 20; i++) {
        const r = await fetch(url, {method: "POST", headers: {authorization: "Bearer " + token, "content-type": "application/json"},
                                    body: JSON.stringify({id: i, completion: "n".repeat(i)})});
        const j = await r.json();
        ids.push(r.status === 200 && j.status === "ok" && j.metrics.length === i ? j.id : -1);
      }
      console.log(JSON.stringify(ids));
    })();
    """
    proc = subprocess.run(["node", "-e", script, url, TOKEN], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and json.loads(proc.stdout) == list(range(20)), proc.stdout + proc.stderr
