"""Pass@k aggregation and figures on hand-built results tables (docs/algorithms.md §5)."""

from __future__ import annotations

import math

import pytest

from botgrpo_cli.errors import UserError
from botgrpo_cli.evaluation.metrics import aggregate, mean_pass_at_k, parse_ks, problem_pass_at_k
from botgrpo_cli.evaluation.report import figures_table, problems_table
from botgrpo_cli.evaluation.results import Problem, Sample
from botgrpo_cli.evaluation.runner import EvalOptions, check


def _problem(pid: str, outcomes: list[bool], metric: str = "correct") -> Problem:
    samples = [Sample(text="x", status="ok", score=float(ok), success=ok, metrics={metric: float(ok), "extracted": 1.0},
                      tokens=10, finished=True) for ok in outcomes]
    return Problem(pid, "prompt", samples)


def _table() -> list[Problem]:
    # (n, c) = (4, 0), (4, 1), (4, 2), (4, 4)
    return [_problem("a", [False] * 4), _problem("b", [True, False, False, False]),
            _problem("c", [False, True, True, False]), _problem("d", [True] * 4)]


def test_pass_at_k_matches_hand_computed_values():
    figs = aggregate(_table(), [1, 2, 4], ["correct"])
    # pass@1 = mean c/n = (0 + 1/4 + 2/4 + 1) / 4
    assert figs["pass@1"] == pytest.approx(0.4375)
    # pass@2 = mean of 1 - C(n-c,2)/C(4,2): 0, 1 - 3/6, 1 - 1/6, 1
    assert figs["pass@2"] == pytest.approx((0 + 0.5 + 5 / 6 + 1) / 4)
    # pass@4: solved at all?
    assert figs["pass@4"] == pytest.approx(0.75)
    assert figs["success_rate"] == pytest.approx(7 / 16)
    assert figs["problems"] == 4 and figs["samples"] == 16 and figs["failed_scoring"] == 0


def test_k_reported_only_when_every_problem_has_enough_samples():
    means, omitted = mean_pass_at_k([(4, 1), (2, 1)], [1, 2, 4])
    assert set(means) == {"pass@1", "pass@2"} and omitted == [4]
    assert means["pass@2"] == pytest.approx((0.5 + 1.0) / 2)
    assert problem_pass_at_k(2, 1, [1, 2, 4]) == {"pass@1": 0.5, "pass@2": 1.0}


def test_failed_scorings_count_as_failures_but_not_in_metric_means():
    p = _problem("a", [True, True])
    p.samples.append(Sample(text="y", status="timeout", score=None, success=False, tokens=4))
    figs = aggregate([p], [1], ["correct", "extracted"])
    assert figs["success_rate"] == pytest.approx(2 / 3)
    assert figs["pass@1"] == pytest.approx(2 / 3)
    assert figs["correct"] == 1.0  # mean over the two scored samples
    assert figs["failed_scoring"] == 1 and figs["score_mean"] == 1.0
    assert figs["length_mean"] == pytest.approx(8)


def test_render_failures_are_counted_when_there_is_a_render_pass():
    p = _problem("a", [True, False], metric="syntax_ok")
    p.samples[0].render_status, p.samples[1].render_status = "ok", "timeout"
    p.samples[0].metrics["rendered"] = 1.0
    figs = aggregate([p], [1], ["syntax_ok", "rendered"])
    assert figs["failed_render"] == 1 and figs["rendered"] == 1.0
    assert "failed_render" not in aggregate(_table(), [1], ["correct"])


def test_parse_ks():
    assert parse_ks("16, 1,4,4") == [1, 4, 16]
    for bad in ("", "0", "1,x", "-1", "2.5"):
        with pytest.raises(ValueError):
            parse_ks(bad)


def test_k_larger_than_n_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match="larger than --n 4"):
        check(EvalOptions(model="m", out=tmp_path, n=4, ks=[1, 16]))


def test_markdown_tables_show_figures_and_per_problem_pass_at_k():
    problems = _table()
    text = figures_table([("model", aggregate(problems, [1, 2], ["correct"]))])
    lines = text.splitlines()
    assert lines[2].startswith("| pass@1 | 0.438") and lines[3].startswith("| pass@2 | 0.583")
    assert "| success rate | 0.438 |" in text
    rows = problems_table(problems, [1, 2, 8]).splitlines()
    assert rows[0] == "| problem | n | correct | pass@1 | pass@2 |"  # pass@8 > n is left out
    assert rows[3] == "| b | 4 | 1 | 0.250 | 0.500 |"
    assert not any(math.isnan(v) for v in aggregate(problems, [1], ["correct"]).values())


def test_turn_figures_only_for_multi_turn_samples_and_zero_calls_shown():
    single = aggregate(_table(), [1], ["correct"])
    assert "turns_mean" not in single and "tool_calls_mean" not in single
    no_calls = _table()
    for p in no_calls:
        for s in p.samples:
            s.multi_turn = True  # a run with tools whose model answered at once
    figs = aggregate(no_calls, [1], ["correct"])
    assert figs["turns_mean"] == 1.0 and figs["tool_calls_mean"] == 0.0 and "tool_calls_valid" not in figs
    no_calls[0].samples[0].turns, no_calls[0].samples[0].tool_calls, no_calls[0].samples[0].tool_errors = 2, 2, 1
    figs = aggregate(no_calls, [1], ["correct"])
    assert figs["turns_mean"] == pytest.approx(17 / 16) and figs["tool_calls_mean"] == pytest.approx(2 / 16)
    assert figs["tool_calls_valid"] == pytest.approx(0.5)
