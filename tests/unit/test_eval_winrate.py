"""Win rate and its seeded bootstrap interval on hand-built pair outcomes."""

from __future__ import annotations

import numpy as np
import pytest

from botgrpo_cli.evaluation.winrate import bootstrap_ci, score_outcome, summarize


def test_summary_counts_and_mean():
    outcomes = [[1.0, 1.0], [0.5, 0.0], [1.0, 0.5]]
    s = summarize(outcomes, seed=3)
    assert s["win_rate"] == pytest.approx(4 / 6)
    assert (s["wins"], s["ties"], s["losses"], s["pairs"]) == (3, 2, 1, 6)
    assert s["ci_low"] <= s["win_rate"] <= s["ci_high"]


def test_bootstrap_matches_a_loop_reference_and_is_seeded():
    outcomes = [[1.0, 0.5, 1.0], [0.0], [0.5, 0.5], [1.0, 0.0, 0.0, 1.0]]
    low, high = bootstrap_ci(outcomes, n_boot=500, seed=11)
    rng = np.random.default_rng(11)  # same draws, problem by problem
    draws = rng.integers(0, len(outcomes), size=(500, len(outcomes)))
    rates = [sum(sum(outcomes[i]) for i in row) / sum(len(outcomes[i]) for i in row) for row in draws]
    assert (low, high) == pytest.approx(tuple(np.percentile(rates, [2.5, 97.5])))
    assert bootstrap_ci(outcomes, n_boot=500, seed=11) == (low, high)
    assert bootstrap_ci(outcomes, n_boot=500, seed=12) != (low, high)


def test_bootstrap_edge_cases():
    assert bootstrap_ci([[0.5, 0.5], [0.5]], seed=0) == (0.5, 0.5)  # no spread, no interval
    # two one-pair problems, a win and a loss: replicates are 0, 0.5 or 1 -> the 95% interval is [0, 1]
    assert bootstrap_ci([[1.0], [0.0]], n_boot=4000, seed=0) == (0.0, 1.0)


def test_bootstrap_width_is_near_the_normal_approximation():
    rng = np.random.default_rng(0)
    outcomes = [[float(x)] for x in rng.random(400) < 0.6]
    low, high = bootstrap_ci(outcomes, n_boot=3000, seed=1)
    p = np.mean([o[0] for o in outcomes])
    half = 1.96 * np.sqrt(p * (1 - p) / 400)
    assert (high - low) / 2 == pytest.approx(half, rel=0.15)


def test_bad_outcomes_are_rejected():
    with pytest.raises(ValueError, match="0, 0.5 or 1"):
        summarize([[0.7]])
    with pytest.raises(ValueError):
        summarize([[], []])


def test_score_judge():
    assert score_outcome(1.0, 0.0) == 1.0 and score_outcome(0.0, 1.0) == 0.0
    assert score_outcome(0.3, 0.3) == 0.5
    assert score_outcome(None, -1.0) == 0.0 and score_outcome(None, None) == 0.5
