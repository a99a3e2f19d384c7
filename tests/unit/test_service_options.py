"""Every reward service rejects a request option it does not know the same way: a bad request
naming the option and the known ones (math and render used to ignore misspellings)."""

from __future__ import annotations

import time

import pytest

from botgrpo_rewards.backend import BackendError, check_option_names
from botgrpo_rewards.math.service import MathBackend
from botgrpo_rewards.protocol import ScoreRequest
from botgrpo_rewards.react.verdict import ReactOptions
from botgrpo_rewards.render.service import OPTIONS as RENDER_OPTIONS, RenderBackend


def test_math_rejects_a_misspelled_option_before_any_work():
    backend = MathBackend(workers=1)  # not started: the check comes first
    with pytest.raises(BackendError) as info:
        backend.score(ScoreRequest(id="1", completion="\\boxed{2}", reference={"answer": "2"},
                                   options={"step": True}), time.monotonic() + 5)
    assert info.value.type == "bad_request"
    assert str(info.value).startswith("unknown math option(s) step; known: answer_credit, answer_penalty, grounding, missing_score, penalize_missing, rel_tol")


def test_render_rejects_a_misspelled_option_before_rendering():
    backend = RenderBackend.__new__(RenderBackend)  # no browser needed: the check comes first
    with pytest.raises(BackendError) as info:
        backend.score(ScoreRequest(id="1", completion="x", options={"judges": "none"}), time.monotonic() + 5)
    assert info.value.type == "bad_request" and str(info.value).startswith("unknown render option(s) judges;")


def test_react_uses_the_same_rule_and_words():
    with pytest.raises(BackendError) as info:
        ReactOptions.parse({"type": False})
    assert str(info.value).startswith("unknown react option(s) type; known: max_type_errors, missing_score, pass_credit, syntax_penalty")


def test_shared_think_options_are_known_everywhere():
    for service, known in (("math", ("steps",)), ("render", RENDER_OPTIONS)):
        check_option_names(service, {"think_tags": ["<think>", "</think>"], "think_open": True}, known)
