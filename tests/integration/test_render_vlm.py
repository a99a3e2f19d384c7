"""The VLM judge client against a local HTTP server that speaks the OpenAI chat API."""

from __future__ import annotations

import base64
import gc
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from botgrpo_rewards.backend import BackendError, BackendTimeout
from botgrpo_rewards.render.service import RenderBackend
from botgrpo_rewards.render.vlm import VlmClient, VlmConfig, judge_pair

PNG_A = b"\x89PNG-fake-candidate"
PNG_B = b"\x89PNG-fake-reference"


class FakeServer:
    """Answers each request with the next scripted reply: (delay_s, status, content). Content
    "RAW:text" is sent as the body itself, "REDIRECT:url" as the Location of a 3xx status."""

    def __init__(self, replies):
        self.replies = list(replies)
        self.requests: list[dict] = []
        self.headers: list[dict] = []
        self.paths: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # a client that followed a redirect would arrive here as a GET
                outer.paths.append(self.path)
                outer.headers.append(dict(self.headers))
                self.send_response(204)
                self.end_headers()

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append(body)
                outer.headers.append(dict(self.headers))
                outer.paths.append(self.path)
                delay, status, content = outer.replies.pop(0) if outer.replies else (0, 200, '{"score": 0}')
                time.sleep(delay)
                location = content[len("REDIRECT:"):] if content.startswith("REDIRECT:") else None
                if content.startswith("RAW:"):  # a body that is not a chat completion at all
                    data = content[4:].encode()
                else:
                    data = json.dumps({"choices": [{"message": {"role": "assistant", "content": content}}]}).encode()
                self.send_response(status)
                if location:
                    self.send_header("Location", location)
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
    assert time.monotonic() - t0 < 2.0  # gave up at the deadline, before the first slow reply (2 s) could come


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


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_a_redirect_is_refused_and_the_key_goes_nowhere_else(serve, status):
    """A 3xx from the VLM server to another port of this machine: nothing reaches that port."""
    elsewhere = serve()
    server = serve((0, status, f"REDIRECT:{elsewhere.url}/chat/completions"))
    with pytest.raises(BackendError) as err:
        _client(server).score("spec", PNG_A, PNG_B, time.monotonic() + 5)
    assert f"HTTP {status}" in str(err.value) and "redirect" in str(err.value)
    assert len(server.requests) == 1 and server.headers[0]["Authorization"] == "Bearer sk-test"
    assert elsewhere.headers == [] and elsewhere.paths == []  # no request, with or without the key
    assert str(elsewhere.httpd.server_address[1]) not in str(err.value)


def test_failures_name_no_address_key_or_server_text(serve):
    """The requester sees a generic reason and the status; never the base URL, its query secret or
    the server's body. The query itself is still sent (some servers take the key there)."""
    server = serve((0, 401, "RAW:UPSTREAM-BODY token=sk-test"), (0, 200, "RAW:<html>UPSTREAM-PAGE</html>"))
    port = str(server.httpd.server_address[1])
    config = dict(base_url=server.url + "?api_key=QUERY-SECRET", model="m", api_key="sk-test", backoff_s=0.01)
    messages = []
    for retries in (0, 0):
        with pytest.raises(BackendError) as err:
            VlmClient(VlmConfig(max_retries=retries, **config)).score("spec", PNG_A, None, time.monotonic() + 5)
        messages.append(str(err.value))
    assert server.paths == ["/v1/chat/completions?api_key=QUERY-SECRET"] * 2
    server.close()  # nothing listens on the port any more: a connection failure
    with pytest.raises((BackendError, BackendTimeout)) as err:
        VlmClient(VlmConfig(max_retries=1, **config)).score("spec", PNG_A, None, time.monotonic() + 5)
    messages.append(str(err.value))
    assert "HTTP 401" in messages[0] and "not JSON" in messages[1] and "connection failed" in messages[2], messages
    for text in messages:
        for secret in ("QUERY-SECRET", "sk-test", "UPSTREAM", "127.0.0.1", port, "http"):
            assert secret not in text, (secret, text)


def test_a_base_url_with_credentials_is_refused_without_repeating_them():
    with pytest.raises(BackendError) as err:
        VlmConfig.from_settings({}, base_url="http://user:HUNTER2@127.0.0.1:1/v1", model="m")
    assert "BOTGRPO_VLM_API_KEY" in str(err.value) and "HUNTER2" not in str(err.value)


def test_distinct_models_pin_nothing(serve, monkeypatch):
    """A request's vlm_model keeps no client alive: the only state requests leave is the verdict
    cache, shared by all models and bounded by its size."""
    server = serve()
    monkeypatch.setattr("botgrpo_rewards.render.service.VLM_CACHE_SIZE", 16, raising=False)
    backend = RenderBackend(vlm_base_url=server.url, vlm_model="m")  # the VLM path needs no browser
    for i in range(100):
        backend._vlm_client({"vlm_model": f"model-{i}"}).score("spec", PNG_A, None, time.monotonic() + 5)
    gc.collect()
    assert len(server.requests) == 100  # each model was asked: a cache keyed by model
    assert sum(isinstance(o, VlmClient) for o in gc.get_objects()) == 0
    assert len(backend._verdicts) == 16
