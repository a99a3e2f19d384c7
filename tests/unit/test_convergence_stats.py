"""Numbers of the convergence benchmark: metric values, steps to target, censored medians, speed-ups."""

from __future__ import annotations

import pytest

from botgrpo_cli.bench.convergence_report import DIAGNOSTIC_COLUMNS, render_markdown, table_rows
from botgrpo_cli.bench.convergence_report import (algo_summary, guard, median_censored, seconds_at, metric_value, pass_k_of, speedups,
                                                 spread, steps_to_target)


def record(step: int, counts: list[int], samples: int = 4) -> dict:
    total = len(counts) * samples
    return {"step": step, "samples": samples, "counts": counts, "means": {"correct": sum(counts) / total}}


def test_metric_value_reads_means_and_computes_unbiased_pass_at_k():
    r = record(5, [0, 2, 4])
    assert metric_value(r, "correct") == pytest.approx(0.5)
    assert metric_value(r, "pass@1") == pytest.approx(0.5)  # pass@1 is the mean success rate
    # pass@2 with n=4: c=0 -> 0, c=2 -> 1 - C(2,2)/C(4,2) = 5/6, c=4 -> 1
    assert metric_value(r, "pass@2") == pytest.approx((0 + 5 / 6 + 1) / 3)
    assert pass_k_of("pass@16") == 16 and pass_k_of("syntax_ok") is None and pass_k_of("pass@") is None
    with pytest.raises(KeyError, match="types_ok"):
        metric_value(r, "types_ok")


def test_steps_to_target_is_the_first_evaluated_step_that_reaches_it():
    points = [(0, 0.3), (5, 0.79), (10, 0.8), (15, 0.7), (20, 0.96)]
    assert steps_to_target(points, 0.8) == 10  # reaching it counts even if it dips later
    assert steps_to_target(points, 0.95) == 20
    assert steps_to_target(points, 0.99) is None


def test_median_counts_unreached_runs_as_slower_than_any_step():
    assert median_censored([10, None, 20]) == 20
    assert median_censored([10, None, None]) is None
    assert median_censored([10, 20]) == 15
    assert spread([10, None, 20]) == (10, None) and spread([15, 5]) == (5, 15) and spread([None]) == (None, None)


def run(seed: int, values: list[float], seconds: float = 100.0) -> dict:
    return {"seed": seed, "train_seconds": seconds,
            "evals": [{"step": 5 * i, "samples": 1, "counts": [], "means": {"ok": v}} for i, v in enumerate(values)]}


def test_summary_speedups_and_table_come_from_the_same_numbers():
    grpo = algo_summary([run(0, [0.2, 0.5, 0.8, 0.9]), run(1, [0.2, 0.6, 0.7, 0.85])], "ok", [0.8])
    bot = algo_summary([run(0, [0.2, 0.8, 0.9, 0.95], 120.0), run(1, [0.2, 0.7, 0.85, 0.9], 140.0)], "ok", [0.8])
    summaries = {"grpo": grpo, "bot_grpo": bot}
    speedups(summaries, "grpo", [0.8])
    assert grpo["targets"]["0.8"]["per_seed"] == {"0": 10, "1": 15} and grpo["targets"]["0.8"]["median"] == 12.5
    assert bot["targets"]["0.8"]["median"] == 7.5 and bot["targets"]["0.8"]["speedup"] == pytest.approx(12.5 / 7.5)
    assert bot["final"] == {"median": pytest.approx(0.925), "min": 0.9, "max": 0.95, "step": 15}
    assert bot["train_seconds"]["median"] == 130.0
    for s in summaries.values():
        s["diagnostics"] = {"all": {k: 0.5 for k in DIAGNOSTIC_COLUMNS}}
    summary = {"task": "t", "metric": "ok", "targets": [0.8], "baseline": "grpo", "algorithms": summaries,
               "settings": {"steps": 15, "seeds": [0, 1], "eval_every": 5, "eval_prompts": 4, "eval_samples": 1,
                            "sets": []}}
    rows = table_rows(summary)
    assert rows[2][:3] == ["bot_grpo", "7.5 (5 to 10)", "1.67x"] and rows[2][-3] == "0.925 (0.900-0.950)"
    assert rows[0][-1] == "train s/step" and rows[2][-2:] == ["130", "8.67"]  # 130 s over 15 steps
    md = render_markdown(summary)
    assert "| bot_grpo | 7.5 (5 to 10) | 1.67x |" in md and "| bot_grpo | all | 0.500 |" in md
    assert "Gamed" not in md  # no run measured the guard
    bot["runs"] = {"0": {"guard": {"gamed": True}}, "1": {"guard": {"gamed": False}}}
    assert "at some evaluation): bot_grpo seed 0." in render_markdown(summary)


def test_a_run_is_gamed_when_its_spec_falls_more_than_the_margin_below_the_base():
    def records(spec: list[float]) -> list[dict]:
        return [{"step": 5 * i, "means": {"compile": 0.5, "spec_ok": v}} for i, v in enumerate(spec)]

    kept = guard(records([0.5, 0.45, 0.41]))
    assert kept == {"metric": "spec_ok", "base": 0.5, "min": 0.41, "final": 0.41, "gamed": False}
    assert guard(records([0.5, 0.3, 0.6]))["gamed"]  # a dip at any evaluation counts
    assert guard([{"step": 0, "means": {"correct": 1.0}}, {"step": 5, "means": {"correct": 1.0}}]) is None


def test_seconds_at_each_evaluated_step_sum_the_steps_before_it():
    metrics = [{"step": s, "time/step_s": 1.5 * s} for s in range(1, 5)]  # 1.5, 3, 4.5, 6
    assert seconds_at(metrics, [0, 2, 4]) == [(0, 0.0), (2, 4.5), (4, 15.0)]
    assert seconds_at([{"step": 1, "time/step_s": None}, {"step": 2, "time/step_s": 1.0}], [0, 2]) is None
