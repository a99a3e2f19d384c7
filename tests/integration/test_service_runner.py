"""The service runner as a real process (tests/fixtures/echo_service.py), spoken to line by line."""

from __future__ import annotations

import io
import json
import queue
import re
import signal
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from botgrpo_cli.reward_client import HttpRewardClient
from botgrpo_rewards import service
from botgrpo_rewards.backend import Backend, ScoreResult
from botgrpo_rewards.protocol import ScoreRequest

ECHO = [sys.executable, str(Path(__file__).parents[1] / "fixtures" / "echo_service.py")]
READ_TIMEOUT_S = 10


class Service:
    """An echo service process with line reads that time out instead of hanging the test."""

    def __init__(self, *args: str):
        self.proc = subprocess.Popen(ECHO + list(args), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def send(self, obj: dict | str) -> None:
        self.proc.stdin.write((obj if isinstance(obj, str) else json.dumps(obj)) + "\n")
        self.proc.stdin.flush()

    def read(self) -> dict | None:
        line = self.lines.get(timeout=READ_TIMEOUT_S)
        return None if line is None else json.loads(line)

    def read_n(self, n: int) -> dict:
        """n responses keyed by id."""
        out = [self.read() for _ in range(n)]
        return {o["id"]: o for o in out}


@pytest.fixture
def svc():
    s = Service()
    yield s
    s.proc.kill()
    s.proc.wait()


def test_hello_comes_first_then_ping_pong_then_shutdown_exits_0(svc):
    assert svc.read() == {"v": 1, "op": "hello", "service": "echo", "version": "0.0.1", "capabilities": ["spans"], "max_inflight": 8}
    svc.send({"v": 1, "op": "ping", "id": "p"})
    assert svc.read() == {"v": 1, "op": "pong", "id": "p"}
    svc.send({"v": 1, "op": "shutdown"})
    assert svc.read() is None
    assert svc.proc.wait(READ_TIMEOUT_S) == 0


def test_bad_lines_get_errors_and_the_service_keeps_serving(svc):
    svc.read()
    svc.send("{this is not json")
    svc.send({"v": 1, "op": "score", "completion": "no id"})
    svc.send({"v": 1, "op": "score", "id": "m"})
    svc.send({"v": 1, "op": "score", "id": "t", "completion": ["not", "text"]})
    svc.send({"v": 9, "op": "score", "id": "v", "completion": "x"})
    errors = [svc.read() for _ in range(5)]
    assert [e["id"] for e in errors] == [None, None, "m", "t", "v"]
    assert all(e["status"] == "error" for e in errors)
    assert "invalid JSON" in errors[0]["error"]["message"]
    assert "completion" in errors[2]["error"]["message"] and "string" in errors[3]["error"]["message"]
    assert errors[4]["error"]["type"] == "version"
    svc.send({"v": 1, "op": "score", "id": "ok", "completion": "hello"})
    ok = svc.read()
    assert ok["status"] == "ok" and ok["score"] == 0.5 and ok["metrics"] == {"length": 5.0}
    assert ok["spans"] == [{"start": 0, "end": 3, "reward": -0.5, "label": "head"}]


def test_deadline_gives_timeout_while_later_requests_complete_first(svc):
    svc.read()
    svc.send({"id": "slow", "completion": "x", "options": {"sleep_ms": 60_000}, "deadline_ms": 300})
    svc.send({"id": "fast", "completion": "y"})
    first, second = svc.read(), svc.read()
    assert (first["id"], first["status"]) == ("fast", "ok")  # answered out of order, matched by id
    assert (second["id"], second["status"]) == ("slow", "timeout")
    assert second["error"]["type"] == "timeout"
    # the abandoned call is still sleeping: shutdown must not wait for it, and its result never comes
    svc.send({"v": 1, "op": "ping", "id": "p"})
    svc.send({"v": 1, "op": "shutdown"})
    assert svc.read()["op"] == "pong"
    assert svc.read() is None
    assert svc.proc.wait(READ_TIMEOUT_S) == 0


def test_backend_failures_and_invalid_results_become_error_responses(svc):
    svc.read()
    svc.send({"id": "raise", "completion": "x", "options": {"raise": True}})
    svc.send({"id": "berr", "completion": "x", "options": {"backend_error": "no browser"}})
    svc.send({"id": "score", "completion": "x", "options": {"score": 1.5}})
    svc.send({"id": "nan", "completion": "x", "options": {"score": "NaN"}})
    svc.send({"id": "span", "completion": "xy", "options": {"bad_span": True}})
    got = svc.read_n(5)
    assert got["raise"]["error"] == {"type": "backend", "message": "RuntimeError: echo was asked to fail"}
    assert got["berr"]["error"] == {"type": "echo_failure", "message": "no browser"}
    for rid in ("score", "nan", "span"):
        assert got[rid]["status"] == "error" and got[rid]["error"]["type"] == "bad_result"
    assert "outside the completion" in got["span"]["error"]["message"]
    svc.send({"id": "after", "completion": "still here"})
    assert svc.read()["status"] == "ok"


def test_eof_on_stdin_finishes_in_flight_work_and_exits_0(svc):
    svc.read()
    svc.send({"id": "a", "completion": "x", "options": {"sleep_ms": 200}})
    svc.proc.stdin.close()
    assert svc.read()["id"] == "a"
    assert svc.proc.wait(READ_TIMEOUT_S) == 0


class ZeroBackend(Backend):
    name = "zero"
    max_inflight = 2

    def score(self, request: ScoreRequest, deadline: float) -> ScoreResult:
        return ScoreResult(score=0.0)


def test_over_long_line_is_skipped_with_null_id_error(monkeypatch):
    monkeypatch.setattr(service, "MAX_LINE_BYTES", 64)  # in-process: a real 16 MB line would be slow
    runner = service.ServiceRunner(ZeroBackend())
    runner.start()
    stdin = io.BytesIO(b'{"id":"big","completion":"' + b"x" * 200 + b'"}\n{"id":"ok","completion":"y"}\n')
    out = io.StringIO()
    assert service.serve_stdio(runner, stdin, out) == 0
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [line.get("op") for line in lines] == ["hello", None, None]
    assert lines[1]["id"] is None and lines[1]["error"]["type"] == "too_large"
    assert (lines[2]["id"], lines[2]["status"], lines[2]["score"]) == ("ok", "ok", 0.0)


def test_unknown_service_name_exits_2_listing_known_ones():
    proc = subprocess.run([sys.executable, "-m", "botgrpo_rewards", "nope"], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2
    assert "unknown reward service 'nope'" in proc.stderr and "math" in proc.stderr
    assert proc.stdout == ""


def test_http_server_round_trip_with_http_client():
    proc = subprocess.Popen(ECHO + ["--http", "127.0.0.1:0"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = None
        for line in proc.stderr:  # the bound address is logged on stderr; stdout stays clean
            m = re.search(r"serving echo on (http://\S+)", line)
            if m:
                url = m.group(1)
                break
        assert url, "server never reported its address"
        client = HttpRewardClient(url)
        assert client.health()["status"] == "ok"
        assert client.info().service == "echo"
        reqs = [ScoreRequest(id="a", completion="hello"), ScoreRequest(id="b", completion="xy", options={"bad_span": 1}), ScoreRequest(id="a", completion="é")]
        got = client.score(reqs)
        assert [(r.id, r.status) for r in got] == [("a", "ok"), ("b", "error"), ("a", "ok")]
        assert got[0].metrics == {"length": 5.0} and got[2].metrics == {"length": 1.0}
        single = urllib.request.urlopen(urllib.request.Request(url + "/v1/score", data=b'{"id":"s","completion":"abc"}'), timeout=10)
        assert json.loads(single.read())["id"] == "s"
        with pytest.raises(urllib.error.HTTPError) as err:
            urllib.request.urlopen(urllib.request.Request(url + "/v1/score", data=b"{nope"), timeout=10)
        assert err.value.code == 400 and json.loads(err.value.read())["id"] is None
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(READ_TIMEOUT_S) == 0


def test_a_slow_item_delays_but_never_times_out_the_ones_queued_behind_it():
    s = Service("--max-inflight", "1")
    try:
        s.read()
        s.send({"id": "slow", "completion": "x", "options": {"sleep_ms": 1500}, "deadline_ms": 800})
        for i in range(3):  # queued behind it: each one's deadline starts when a worker takes it
            s.send({"id": f"n{i}", "completion": "abc", "deadline_ms": 800})
        got = s.read_n(4)
        assert got["slow"]["status"] == "timeout"
        assert [got[f"n{i}"]["status"] for i in range(3)] == ["ok", "ok", "ok"]
    finally:
        s.proc.kill()
        s.proc.wait()


def test_an_oversized_completion_is_refused_before_it_is_queued(svc):
    svc.read()
    svc.send({"id": "huge", "completion": "x" * 500_000})
    svc.send({"id": "small", "completion": "abc"})
    got = svc.read_n(2)
    assert got["huge"]["error"]["type"] == "too_large" and "limit of 400000" in got["huge"]["error"]["message"]
    assert got["small"]["status"] == "ok"
