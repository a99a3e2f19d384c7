"""A request can never move a service's URLs, secrets or files: the real render service, a real listener."""

from __future__ import annotations

import json
import socket

import pytest

from botgrpo_cli.reward_client import RewardPool
from botgrpo_rewards.protocol import ScoreRequest

GOOD = "```tsx\nexport default function App() { return <h1>Hi</h1>; }\n```"


@pytest.fixture()
def listener():
    """A TCP listener that only counts connections (none may arrive)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    sock.setblocking(False)

    def connections() -> int:
        n = 0
        while True:
            try:
                sock.accept()[0].close()
                n += 1
            except BlockingIOError:
                return n
    yield f"http://127.0.0.1:{sock.getsockname()[1]}/v1", connections
    sock.close()


def test_vlm_redirect_and_save_dir_are_bad_requests(listener, tmp_path):
    url, connections = listener
    attempts = {
        "url": {"judge": "vlm", "vlm_base_url": url, "vlm_model": "m"},
        "key": {"judge": "vlm", "vlm_api_key": "sk-stolen?"},
        "url_elsewhere": {"judge": "vlm", "callback": url},
        "save": {"judge": "none", "save_dir": str(tmp_path / "planted")},
    }
    env = {"BOTGRPO_VLM_BASE_URL": "http://127.0.0.1:9/v1", "BOTGRPO_VLM_MODEL": "m", "BOTGRPO_VLM_API_KEY": "sk-server"}
    with RewardPool("render", workers=1, env=env) as pool:
        answers = pool.score([ScoreRequest(id=k, completion=GOOD, options=o, deadline_ms=20_000)
                              for k, o in attempts.items()])
        fine = pool.score([ScoreRequest(id="ok", completion=GOOD, options={"judge": "none"}, deadline_ms=20_000)])[0]
    for resp in answers:
        assert resp.status == "error" and resp.error.type == "bad_request", resp
        assert "service's own settings" in resp.error.message
        assert "sk-server" not in json.dumps(resp.to_json())
    assert fine.ok and fine.score == 1.0  # the service kept serving
    assert connections() == 0
    assert not (tmp_path / "planted").exists()


def test_endless_renders_on_every_page_delay_but_do_not_fail_normal_ones():
    loop = "```tsx\nexport default function App() { while (true) {} return null; }\n```"
    with RewardPool("render", workers=1, env={"BOTGRPO_RENDER_PAGES": "2"}) as pool:
        assert pool.hello.max_inflight == 2  # one request per page: the rest wait unstarted
        hostile = [pool.submit(ScoreRequest(id=f"loop{i}", completion=loop, options={"judge": "none"},
                                            deadline_ms=2000)) for i in range(2)]
        normal = [pool.submit(ScoreRequest(id=f"n{i}", completion=GOOD, options={"judge": "none"}, deadline_ms=15_000))
                  for i in range(6)]
        assert [f.result().status for f in hostile] == ["timeout", "timeout"]
        assert [f.result().status for f in normal] == ["ok"] * 6
        assert all(f.result().score == 1.0 for f in normal)
