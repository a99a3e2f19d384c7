"""Render service pieces that need no browser: VLM reply parsing, pairwise ties, options, Chromium lookup."""

from __future__ import annotations

import pytest

from botgrpo_rewards.backend import BackendError
from botgrpo_rewards.render.chromium import HOW_TO_GET_ONE, ChromiumNotFound, find_chromium
from botgrpo_rewards.render.judges import RenderOptions
from botgrpo_rewards.render.vlm import MalformedReply, VlmConfig, judge_pair, parse_score, parse_winner


@pytest.mark.parametrize("reply, expected", [
    ('{"score": 7, "reason": "close"}', 0.7),
    ('Sure!\n```json\n{"score": "10", "reason": "ok"}\n```', 1.0),
    ('{"rating": 3}', 0.3),
    ('{"score": 42}', 1.0),
    ('{"score": -3}', 0.0),
    ('noise {not json} then {"score": 5}', 0.5),
])
def test_parse_score(reply, expected):
    assert parse_score(reply)[0] == pytest.approx(expected)


@pytest.mark.parametrize("reply", ["", "seven out of ten", '{"score": "high"}', '{"reason": "no score"}', "[1, 2]"])
def test_parse_score_rejects_malformed(reply):
    with pytest.raises(MalformedReply):
        parse_score(reply)


@pytest.mark.parametrize("reply, expected", [
    ('{"winner": 1}', "first"), ('{"winner": "2"}', "second"), ('{"winner": "TIE"}', "tie"), ('x {"winner": "B"}', "second"),
])
def test_parse_winner(reply, expected):
    assert parse_winner(reply) == expected


def test_parse_winner_rejects_unknown():
    with pytest.raises(MalformedReply):
        parse_winner('{"winner": 3}')


def test_judge_pair_needs_agreement_in_both_orders():
    always_first = lambda a, b: "first"  # noqa: E731  (a position-biased judge)
    assert judge_pair(b"A", b"B", always_first) == 0.5
    prefers_a = lambda a, b: "first" if a == b"A" else "second"  # noqa: E731
    assert judge_pair(b"A", b"B", prefers_a) == 1.0
    assert judge_pair(b"B", b"A", prefers_a) == 0.0
    assert judge_pair(b"A", b"B", lambda a, b: "tie") == 0.5


def test_vlm_config_url_and_env(monkeypatch):
    monkeypatch.setenv("BOTGRPO_VLM_BASE_URL", "http://h:1/v1/")
    monkeypatch.setenv("BOTGRPO_VLM_MODEL", "m")
    monkeypatch.setenv("BOTGRPO_VLM_API_KEY", "sk-server")
    cfg = VlmConfig.from_settings({})
    assert cfg.url == "http://h:1/v1/chat/completions" and cfg.model == "m" and cfg.api_key == "sk-server"
    assert VlmConfig.from_settings({}, base_url="http://x:2").url == "http://x:2/v1/chat/completions"
    assert VlmConfig.from_settings({}, base_url="https://x/v1/?key=s").url == "https://x/v1/chat/completions?key=s"
    # a request's options never move the server or its key; they may pick the model name
    cfg = VlmConfig.from_settings({"vlm_base_url": "http://evil:1", "vlm_api_key": "x", "vlm_model": "n"})
    assert (cfg.base_url, cfg.api_key, cfg.model) == ("http://h:1/v1/", "sk-server", "n")
    monkeypatch.delenv("BOTGRPO_VLM_BASE_URL")
    with pytest.raises(BackendError, match="BOTGRPO_VLM_BASE_URL"):
        VlmConfig.from_settings({})


def test_render_options():
    assert RenderOptions.parse({}) == RenderOptions("similarity", "single", "")
    assert RenderOptions.parse({"judge": "vlm", "mode": "pairwise"}).mode == "pairwise"
    for bad in ({"judge": "eyeball"}, {"mode": "triple"}, {"save_group": 3}):
        with pytest.raises(BackendError):
            RenderOptions.parse(bad)


def test_find_chromium_order(tmp_path, monkeypatch):
    fake = tmp_path / "chrome"
    fake.write_text("")
    monkeypatch.delenv("BOTGRPO_CHROMIUM", raising=False)
    assert find_chromium(str(fake)) == str(fake)
    monkeypatch.setenv("BOTGRPO_CHROMIUM", str(fake))
    assert find_chromium() == str(fake)
    assert find_chromium(None, "/elsewhere") == str(fake)  # the configured path wins over Playwright's
    monkeypatch.setenv("BOTGRPO_CHROMIUM", str(tmp_path / "missing"))
    with pytest.raises(ChromiumNotFound, match="apt-get install chromium"):
        find_chromium()
    monkeypatch.delenv("BOTGRPO_CHROMIUM")
    assert find_chromium(None, str(fake)) == str(fake)  # Playwright's own before the system's
    monkeypatch.setattr("botgrpo_rewards.render.chromium.SYSTEM_PATHS", ())
    with pytest.raises(ChromiumNotFound) as err:
        find_chromium(None, None)
    assert str(err.value) == HOW_TO_GET_ONE and "playwright install chromium" in HOW_TO_GET_ONE
