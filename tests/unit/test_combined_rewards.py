"""Several reward services as one: the combination rule and the `reward.services` config."""

from __future__ import annotations

import pytest
import torch

from botgrpo_cli.algos import project_spans
from botgrpo_cli.config import load_config
from botgrpo_cli.errors import UserError
from botgrpo_cli.reward_client.combined import ServiceSpec, combine, parse_services
from botgrpo_rewards.protocol import ScoreResponse, Span, error_response

REACT, RENDER = ServiceSpec("react", 1.0), ServiceSpec("render", 0.5)


def _ok(score: float, spans=(), metrics=None) -> ScoreResponse:
    return ScoreResponse(id="x", status="ok", score=score, spans=list(spans), metrics=dict(metrics or {}))


def test_score_is_the_weighted_sum_and_spans_are_weighted():
    react = _ok(1.0, [Span(0, 4, -1.0, "TS2322")], {"syntax_ok": 1.0})
    render = _ok(0.6, [Span(2, 6, 0.8)], {"rendered": 1.0, "similarity": 0.6})
    out = combine("row-1", [(REACT, react), (RENDER, render)])
    assert out.ok and out.id == "row-1" and out.score == pytest.approx(1.0 + 0.5 * 0.6)
    assert [(s.start, s.end, s.reward, s.label) for s in out.spans] == [(0, 4, -1.0, "react:TS2322"),
                                                                       (2, 6, 0.4, "render")]
    assert out.metrics == {"syntax_ok": 1.0, "react/score": 1.0, "render/rendered": 1.0,
                           "render/similarity": 0.6, "render/score": 0.6}
    assert out.info["services"] == {"react": "ok", "render": "ok"}


def test_projection_of_the_combined_spans_is_the_weighted_sum_of_each_projection():
    offsets = [[(0, 2), (2, 3), (3, 6), (6, 6)]]  # the last token has no characters (EOS)
    react, render = [Span(0, 4, -1.0)], [Span(2, 6, 0.8), Span(0, 1, 0.2)]
    out = combine("r", [(REACT, _ok(0.0, react)), (RENDER, _ok(0.0, render))])
    both = project_spans([[(s.start, s.end, s.reward) for s in out.spans]], offsets, 4)
    each = [project_spans([[(s.start, s.end, s.reward) for s in spans]], offsets, 4) for spans in (react, render)]
    torch.testing.assert_close(both, each[0] + 0.5 * each[1])


@pytest.mark.parametrize("failure", [error_response("x", "timeout", "deadline passed", status="timeout"),
                                     ScoreResponse(id="x", status="ok", score=None)])
def test_one_failed_service_fails_the_completion_and_says_which(failure):
    out = combine("r", [(REACT, _ok(1.0)), (RENDER, failure)])
    assert not out.ok and out.score is None and out.spans == [] and out.metrics == {}
    assert out.status == ("timeout" if failure.status == "timeout" else "error")
    assert "'render'" in out.error.message
    assert out.info["services"] == {"react": "ok", "render": failure.status}


def test_parse_services_accepts_weights_and_mappings_in_order():
    specs = parse_services({"react": 1, "render": {"weight": 0.5, "options": {"judge": "similarity"}, "workers": 2}})
    assert specs == [ServiceSpec("react", 1.0), ServiceSpec("render", 0.5, {"judge": "similarity"}, 2, None)]


@pytest.mark.parametrize("bad, says", [({"react": "heavy"}, "weight"), ({"react": {"wieght": 1}}, "unknown key"),
                                       ({"react": {"weight": float("nan")}}, "finite"),
                                       ({"react": {"workers": 0}}, "workers"),
                                       ({"react": {"command": "node x.js"}}, "argv")])
def test_parse_services_rejects_bad_entries(bad, says):
    with pytest.raises(ValueError, match=says):
        parse_services(bad)


def test_config_takes_services_and_refuses_mixing_them_with_reward_service():
    cfg = load_config(None, sets=["reward.services={react: 1.0, render: 0.5}"])
    assert [s.name for s in parse_services(cfg.reward.services)] == ["react", "render"]
    assert load_config(None).reward.services == {}  # the single-service config is unchanged
    with pytest.raises(UserError, match="reward.services"):
        load_config(None, sets=["reward.services={react: 1.0}", "reward.service=math"])
    with pytest.raises(UserError, match="unknown service 'reactt'"):
        load_config(None, sets=["reward.services={reactt: 1.0}"])
    with pytest.raises(UserError, match="weight"):
        load_config(None, sets=["reward.services={react: heavy}"])
