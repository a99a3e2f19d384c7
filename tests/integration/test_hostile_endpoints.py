"""Reward endpoints that break the protocol on purpose: answers reordered, left out, duplicated or
for ids never sent, a reply trickled a byte at a time, another protocol version. Real sockets on
127.0.0.1 (small HTTP servers in threads) and real child processes (stdio); every row's reward is
its own or the row is masked (a non-ok status), and nothing waits past its deadline."""

from __future__ import annotations

import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from botgrpo_cli.errors import UserError
from botgrpo_cli.reward_client.http import EndpointError, HttpRewardClient
from botgrpo_cli.reward_client.pool import RewardPool
from botgrpo_cli.reward_client.remote import RemotePool
from botgrpo_rewards.protocol import ScoreRequest, ServiceStartError

HELLO = {"v": 1, "op": "hello", "service": "fake", "version": "0", "capabilities": [], "max_inflight": 64}


def own_score(completion: str) -> float:
    """What an honest service answers: a score only this completion gets."""
    return len(completion) / 100


def answer(obj: dict) -> dict:
    return {"v": 1, "id": obj["id"], "status": "ok", "score": own_score(obj["completion"]), "spans": [],
            "metrics": {}, "info": {}}


def reordered(reqs: list[dict]) -> list[dict]:
    return [answer(r) for r in reversed(reqs)]


def one_left_out(reqs: list[dict]) -> list[dict]:
    return [answer(r) for r in reqs[1:]]


def one_twice(reqs: list[dict]) -> list[dict]:
    # the first request answered twice (and once with another row's score), the last one left out
    out = [answer(r) for r in reqs[:-1]]
    return [dict(out[0], score=own_score(reqs[-1]["completion"]))] + out


def invented(reqs: list[dict]) -> list[dict]:
    return [dict(answer(r), id=f"not-{r['id']}") for r in reqs] + [answer(r) for r in reqs][::2]


class FakeEndpoint:
    """An HTTP endpoint speaking the protocol's framing, answering /v1/score with `respond(requests)`;
    `trickle_s`: seconds between the bytes of each score reply (the whole reply, headers included)."""

    def __init__(self, respond=reordered, trickle_s: float = 0.0, hello: dict | None = None):
        self.posts = 0
        self.auth: list[str | None] = []  # the Authorization header of each GET
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # quiet
                pass

            def _reply(self, obj: dict, slow: bool = False) -> None:
                body = json.dumps(obj).encode()
                head = (f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
                        ).encode()
                data = head + body
                if not slow:
                    self.wfile.write(data)
                    return
                for i in range(len(data)):
                    try:
                        self.wfile.write(data[i:i + 1])
                        self.wfile.flush()
                    except OSError:  # the client gave up: what it should do
                        return
                    time.sleep(trickle_s)

            def do_GET(self):
                fake.auth.append(self.headers.get("Authorization"))
                self._reply(hello or HELLO)

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                fake.posts += 1
                self._reply({"responses": respond(body["requests"])}, slow=trickle_s > 0)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def endpoints():
    made: list[FakeEndpoint] = []

    def make(*args, **kwargs) -> FakeEndpoint:
        made.append(FakeEndpoint(*args, **kwargs))
        return made[-1]
    yield make
    for e in made:
        e.close()


def _requests(n: int, deadline_ms: int = 10_000) -> list[ScoreRequest]:
    # the same id twice on purpose: callers may reuse ids, answers must still find their row
    return [ScoreRequest(id=f"r{i % (n - 1)}", completion="x" * (i + 1), deadline_ms=deadline_ms) for i in range(n)]


def _own_or_masked(reqs: list[ScoreRequest], got) -> tuple[int, int]:
    """(rows scored, rows masked); fails when a row carries any reward but its own."""
    assert len(got) == len(reqs)
    scored = masked = 0
    for req, resp in zip(reqs, got):
        assert resp.id == req.id
        if resp.ok:
            assert resp.score == own_score(req.completion), (req.id, resp)
            scored += 1
        else:
            assert resp.score is None and resp.error.type == "bad_response"
            masked += 1
    return scored, masked


@pytest.mark.parametrize("respond, masked", [(reordered, 0), (one_left_out, 1), (one_twice, 2), (invented, 6)])
def test_every_row_gets_its_own_reward_or_is_masked(endpoints, respond, masked):
    e = endpoints(respond)
    reqs = _requests(12)
    with RemotePool([e.url], deadline_ms=2000) as pool:
        got = pool.score(reqs)
        stats = pool.stats
    assert _own_or_masked(reqs, got) == (12 - masked, masked)
    assert stats["error"] == masked  # counted: the trainer masks them and reports reward/masked
    assert stats["stray_answers"] == (12 if respond is invented else 0)


def test_a_trickling_endpoint_fails_at_its_deadline_and_its_batch_is_resent_to_another(endpoints):
    slow, honest = endpoints(reordered, trickle_s=0.05), endpoints(reordered)
    reqs = _requests(16, deadline_ms=300)
    with RemotePool([slow.url, honest.url], deadline_ms=300, hang_timeout_s=0.5) as pool:
        futures = [pool.submit(r) for r in reqs]
        got = [f.result(timeout=60) for f in futures]  # the trickle would take minutes: the deadline cut it
        stats = pool.stats
    assert _own_or_masked(reqs, got) == (16, 0)
    assert slow.posts >= 1 and stats["endpoint_failures"] >= 1 and stats["resent"] >= 1


def test_a_trickling_endpoint_alone_is_answered_service_died_not_waited_on(endpoints):
    slow = endpoints(reordered, trickle_s=0.05)
    client = HttpRewardClient(slow.url, timeout_s=0.5)
    with pytest.raises(EndpointError, match="did not answer /v1/score in time"):
        client.score_batch(_requests(4))
    with RemotePool([slow.url], deadline_ms=200, hang_timeout_s=0.3, max_tries=2) as pool:
        resp = pool.submit(_requests(2, deadline_ms=200)[0]).result(timeout=60)
    assert resp.status == "error" and resp.error.type == "service_died" and "in time" in resp.error.message


def test_an_answer_longer_than_the_protocol_allows_is_not_read(endpoints):
    e = endpoints(lambda reqs: [dict(answer(r), info={"pad": "x" * 16_000_000}) for r in reqs])
    with pytest.raises(EndpointError, match="over 16,000,000 bytes"):
        HttpRewardClient(e.url).score_batch(_requests(2)[:1])


def test_an_endpoint_of_another_protocol_version_is_one_line_naming_both(endpoints):
    e = endpoints(hello=dict(HELLO, v=2))
    with pytest.raises(UserError) as err:
        RemotePool([e.url])
    message = str(err.value)
    assert "\n" not in message and "version 2" in message and "version 1" in message


FAKE_STDIO = r'''
import json, sys
mode = sys.argv[1]
print(json.dumps({"v": 2 if mode == "v2" else 1, "op": "hello", "service": "fake", "version": "0",
                  "capabilities": [], "max_inflight": 4}), flush=True)
held = []
for line in sys.stdin:
    obj = json.loads(line)
    if obj.get("op") == "shutdown":
        break
    ans = {"v": 1, "id": obj["id"], "status": "ok", "score": len(obj["completion"]) / 100, "spans": [],
           "metrics": {}, "info": {}}
    held.append(ans)
    if len(held) == 4:  # answer in reverse, each twice, plus one for an id never sent
        for a in reversed(held):
            print(json.dumps(a), flush=True)
            print(json.dumps(dict(a, score=-1.0)), flush=True)
        print(json.dumps(dict(held[0], id="never-sent")), flush=True)
        held = []
'''


def test_a_stdio_service_that_reorders_repeats_and_invents_ids_gives_each_row_its_own_reward(tmp_path):
    script = tmp_path / "fake_service.py"
    script.write_text(FAKE_STDIO)
    reqs = _requests(8)
    with RewardPool("fake", command=[sys.executable, str(script), "mixed"]) as pool:
        got = pool.score(reqs)
    stats = pool.stats  # after close: every line the service wrote has been read
    assert _own_or_masked(reqs, got) == (8, 0)  # a stream keeps the first answer per id; the rest are strays
    assert stats["stray_answers"] == 8 + 2


def test_a_stdio_service_of_another_protocol_version_is_one_line_naming_both(tmp_path):
    script = tmp_path / "fake_service.py"
    script.write_text(FAKE_STDIO)
    with pytest.raises(ServiceStartError) as err:
        RewardPool("fake", command=[sys.executable, str(script), "v2"], startup_timeout_s=60)
    message = str(err.value)
    assert "\n" not in message and "version 2" in message and "version 1" in message


def test_credentials_in_the_url_are_sent_as_basic_auth_unless_a_token_is_set(endpoints, monkeypatch):
    import base64

    monkeypatch.delenv("BOTGRPO_REWARD_TOKEN", raising=False)
    e = endpoints()
    with_user = e.url.replace("http://", "http://alice:p%40ss@")
    client = HttpRewardClient(with_user)
    client.health()
    HttpRewardClient(with_user, token="tok").health()
    assert e.auth == ["Basic " + base64.b64encode(b"alice:p@ss").decode(), "Bearer tok"]
    assert client.base_url == e.url  # what messages show


TRICKLING_STDIO = r'''
import json, sys, time
print(json.dumps({"v": 1, "op": "hello", "service": "slow", "version": "0", "capabilities": [],
                  "max_inflight": 4}), flush=True)
for line in sys.stdin:
    obj = json.loads(line)
    if obj.get("op") == "shutdown":
        break
    answer = json.dumps({"v": 1, "id": obj["id"], "status": "ok", "score": 1.0, "spans": [], "metrics": {},
                         "info": {}}) + "\n"
    for ch in answer:  # a byte every 50 ms: about 5 s for the line
        sys.stdout.write(ch)
        sys.stdout.flush()
        time.sleep(0.05)
'''


def test_a_stdio_service_that_trickles_its_answer_is_hung_and_the_request_times_out(tmp_path):
    script = tmp_path / "slow_service.py"
    script.write_text(TRICKLING_STDIO)
    with RewardPool("slow", command=[sys.executable, str(script)], hang_timeout_s=0.3) as pool:
        resp = pool.submit(ScoreRequest(id="a", completion="x", deadline_ms=200)).result(timeout=60)
        stats = pool.stats
    assert resp.status == "timeout" and "hung" in resp.error.message  # sent twice, cut both times
    assert stats["restarts"] >= 2 and stats["resent"] >= 1


def test_the_trl_and_verl_scorer_on_a_url_matches_answers_by_id(endpoints):
    from botgrpo_cli.integrations.service import ServiceScorer

    e = endpoints(one_left_out)
    texts = ["x" * (i + 1) for i in range(6)]
    with ServiceScorer("fake", url=e.url, deadline_ms=2000) as scorer:
        scored = scorer.score([""] * 6, texts, [{}] * 6)
    assert scored.ok.tolist() == [False] + [True] * 5  # the row left out is masked
    assert [r.score for r in scored.responses[1:]] == [own_score(t) for t in texts[1:]]
