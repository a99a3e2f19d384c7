"""The results pages are generated from committed JSON: the docs and the JSON cannot disagree."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from botgrpo_cli.bench import results_doc as rd

ROOT = Path(__file__).resolve().parents[2]


def test_committed_pages_equal_what_the_json_gives():
    pages = rd.generate(ROOT)
    stale = [str(p.relative_to(ROOT)) for p, text in pages.items() if p.read_text() != text]
    assert not stale, f"out of date: {stale}; run `botgrpo bench results` and commit"


def _set(finals: dict[str, dict[str, float]], start: float = 0.25) -> dict:
    """A minimal convergence.json: preset -> seed -> final value, every run starting at `start`."""
    algos = {}
    for algo, by_seed in finals.items():
        vals = sorted(by_seed.values())
        algos[algo] = {
            "runs": {s: {"curve": [[0, start], [10, v]]} for s, v in by_seed.items()},
            "final": {"median": vals[len(vals) // 2], "min": vals[0], "max": vals[-1], "step": 10},
            "targets": {"0.5": {"per_seed": {s: (10 if v >= 0.5 else None) for s, v in by_seed.items()}}},
        }
    return {"metric": "all_ok", "baseline": "grpo", "algorithms": algos,
            "settings": {"seeds": [0, 1], "steps": 10, "eval_every": 10, "targets": [0.5],
                         "eval_prompts": 50, "eval_samples": 2}}


def test_paired_gains_pair_by_seed_not_by_order():
    data = _set({"grpo": {"0": 0.5, "1": 0.2}, "bot_grpo": {"1": 0.3, "0": 0.4}})
    assert rd.paired_gains(data, "bot_grpo", "grpo") == pytest.approx([-0.1, 0.1])


def test_bootstrap_interval_brackets_the_mean_and_is_seeded():
    values = [0.01, 0.03, 0.05, 0.02, 0.04]
    lo, hi = rd.bootstrap_mean_interval(values)
    assert lo < sum(values) / len(values) < hi
    assert (lo, hi) == rd.bootstrap_mean_interval(values)
    assert rd.bootstrap_mean_interval([0.2, 0.2]) == (pytest.approx(0.2), pytest.approx(0.2))


def test_base_rate_interval_counts_completions_or_prompts():
    data = _set({"grpo": {"0": 0.5, "1": 0.6}}, start=0.5)
    p, n = rd.base_rate(data)
    assert (p, n) == (0.5, 100)
    lo, hi = rd.rate_interval(p, n)
    assert hi - lo == pytest.approx(2 * 1.959964 * 0.05, rel=1e-6)  # sqrt(.25/100) = 0.05
    data["metric"] = "pass@8"
    assert rd.base_rate(data)[1] == 50  # one value per prompt


def test_runs_that_start_apart_are_refused():
    data = _set({"grpo": {"0": 0.5, "1": 0.6}})
    data["algorithms"]["grpo"]["runs"]["1"]["curve"][0][1] = 0.3
    with pytest.raises(ValueError, match="step-0"):
        rd.base_rate(data)


def test_a_changed_number_in_the_json_changes_the_page(tmp_path):
    src = ROOT / "docs" / "results" / "convergence16"
    dst = tmp_path / "docs" / "results" / "convergence16"
    for path in src.glob("*/convergence.json"):
        (dst / path.parent.name).mkdir(parents=True)
        data = json.loads(path.read_text())
        if path.parent.name == "react_synth_k2":
            data = copy.deepcopy(data)
            data["algorithms"]["bot_grpo"]["final"]["median"] = 0.999
        (dst / path.parent.name / "convergence.json").write_text(json.dumps(data))
    (tmp_path / "README.md").write_text((ROOT / "README.md").read_text())
    pages = rd.generate(tmp_path)
    assert "0.999" in pages[tmp_path / "README.md"]
    assert pages[tmp_path / "README.md"] != (ROOT / "README.md").read_text()
