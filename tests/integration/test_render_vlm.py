"""The VLM judge client against a local HTTP server that speaks the OpenAI chat API."""

from __future__ import annotations

import base64
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from botgrpo_rewards.backend import BackendError, BackendTimeout
from botgrpo_rewards.render.vlm import VlmClient, VlmConfig, judge_pair

PNG_A = b"\x89PNG-fake-candidate"
PNG_B = b"\x89PNG-fake-reference"


class FakeServer:
    """Answers each POST with the next scripted reply: (delay_s, status, content)."""

    def __init__(self, replies):
        self.replies = list(replies)
        self.requests: list[dict] = []
        self.headers: list[dict] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append(body)
                outer.headers.append(dict(self.headers))
                delay, status, content = outer.replies.pop(0) if outer.replies else (0, 200, '{"score": 0}')
                time.sleep(delay)
                if content.startswith("RAW:"):  # a body that is not a chat completion at all
                    data = content[4:].encode()
                else:
                    data = json.dumps({"choices": [{"message": {"role": "assistant", "content": content}}]}).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                try:
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def serve():
    servers = []

    def make(*replies):
        servers.append(FakeServer(replies))
        return servers[-1]
    yield make
    for s in servers:
        s.close()


def _client(server, **kw):
    return VlmClient(VlmConfig(base_url=server.url, model="judge-vl", api_key="sk-test", backoff_s=0.05, **kw))


def test_request_shape_and_score(serve):
    server = serve((0, 200, '{"score": 8, "reason": "looks right"}'))
    score, reason = _client(server).score("Make a red button", PNG_A, PNG_B, time.monotonic() + 5)
    assert score == pytest.approx(0.8) and reason == "looks right"
    body = server.requests[0]
    assert body["model"] == "judge-vl"
    assert server.headers[0]["Authorization"] == "Bearer sk-test"
    parts = body["messages"][0]["content"]
    assert parts[0]["type"] == "text" and "Make a red button" in parts[0]["text"]
    images = [p["image_url"]["url"] for p in parts if p["type"] == "image_url"]
    assert images == ["data:image/png;base64," + base64.b64encode(x).decode() for x in (PNG_A, PNG_B)]


def test_cached_by_image_hashes(serve):
    server = serve((0, 200, '{"score": 6}'))
    client = _client(server)
    for _ in range(3):
        assert client.score("spec", PNG_A, None, time.monotonic() + 5)[0] == pytest.approx(0.6)
    assert len(server.requests) == 1
    assert len(server.requests[0]["messages"][0]["content"]) == 2  # text + candidate only


def test_malformed_replies_are_retried(serve):
    server = serve((0, 200, "I think it is good"), (0, 200, "RAW:<html>oops"), (0, 503, "busy"), (0, 200, '```json\n{"score": 9}\n```'))
    assert _client(server).score("spec", PNG_A, PNG_B, time.monotonic() + 5)[0] == pytest.approx(0.9)
    assert len(server.requests) == 4


def test_gives_up_after_retries(serve):
    server = serve(*[(0, 200, "no verdict")] * 5)
    with pytest.raises(BackendError, match="gave up after 3 attempts"):
        _client(server, max_retries=2).score("spec", PNG_A, PNG_B, time.monotonic() + 5)


def test_client_error_is_not_retried(serve):
    server = serve((0, 400, "bad model"))
    with pytest.raises(BackendError, match="HTTP 400"):
        _client(server).score("spec", PNG_A, PNG_B, time.monotonic() + 5)
    assert len(server.requests) == 1


def test_slow_reply_is_retried_then_answered(serve):
    server = serve((1.0, 200, '{"score": 1}'), (0, 200, '{"score": 4}'))
    score, _ = _client(server, request_timeout_s=0.3).score("spec", PNG_A, PNG_B, time.monotonic() + 5)
    assert score == pytest.approx(0.4) and len(server.requests) == 2


def test_slow_server_times_out_within_deadline(serve):
    server = serve(*[(2.0, 200, '{"score": 1}')] * 3)
    t0 = time.monotonic()
    with pytest.raises(BackendTimeout):
        _client(server).score("spec", PNG_A, PNG_B, t0 + 0.5)
    assert time.monotonic() - t0 < 1.0


def test_pairwise_both_orders_and_position_bias_is_a_tie(serve):
    server = serve((0, 200, '{"winner": 1}'), (0, 200, '{"winner": 2}'))
    client = _client(server)
    verdict = lambda a, b: client.compare("spec", a, b, time.monotonic() + 5)  # noqa: E731
    assert judge_pair(PNG_A, PNG_B, verdict) == 1.0
    first = [p["image_url"]["url"] for p in server.requests[0]["messages"][0]["content"][1:]]
    second = [p["image_url"]["url"] for p in server.requests[1]["messages"][0]["content"][1:]]
    assert first == second[::-1]  # the second question swaps the images
    biased = serve((0, 200, '{"winner": 1}'), (0, 200, '{"winner": 1}'))
    client = _client(biased)
    assert judge_pair(PNG_A, PNG_B, lambda a, b: client.compare("spec", a, b, time.monotonic() + 5)) == 0.5
