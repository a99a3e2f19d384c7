"""The results pages are generated from committed JSON: the docs and the JSON cannot disagree."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

import results_doc as rd  # research/pages, on sys.path through pytest's pythonpath (pyproject.toml)

ROOT = Path(__file__).resolve().parents[2]


def test_committed_pages_equal_what_the_json_gives():
    pages = rd.generate(ROOT)
    stale = [str(p.relative_to(ROOT)) for p, body in pages.items() if not rd.same_content(p, body)]
    curves = [p for p in pages if p.name == rd.CURVES_PNG]  # generated with the page, byte for byte
    page = pages[ROOT / "research" / "results.md"]
    assert curves and all(f"]({p.relative_to(ROOT / 'research')})" in page for p in curves)  # and shown on it
    assert not stale, f"out of date: {stale}; run `python research/pages/make_pages.py` and commit"


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
    src = ROOT / "research" / "results"
    for path in src.rglob("*.json"):
        dst = tmp_path / "research" / "results" / path.relative_to(src)
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.write_text(path.read_text())
    changed = tmp_path / "research" / "results" / "convergence16" / "react_synth_k2" / "convergence.json"
    data = json.loads(changed.read_text())
    data["algorithms"]["bot_grpo"]["final"]["median"] = 0.999
    changed.write_text(json.dumps(data))
    pages = rd.generate(tmp_path, figures=False)
    assert "0.999" in pages[tmp_path / "research" / "results.md"]
    assert pages[tmp_path / "research" / "results.md"] != (ROOT / "research" / "results.md").read_text()


def test_contrasts_pair_across_sets_by_seed_and_refuse_different_starts():
    clean = _set({"bot_grpo_outcome": {"0": 0.30, "1": 0.40, "2": 0.20}})
    noisy = _set({"bot_grpo_outcome": {"2": 0.10, "0": 0.35, "1": 0.40}})
    found = {"clean": clean, "noisy": noisy}
    c = rd.Contrast("noisy - clean", ("noisy", "bot_grpo_outcome"), ("clean", "bot_grpo_outcome"))
    assert rd.contrast_gains(found, c) == pytest.approx([0.05, 0.0, -0.1])
    assert rd.contrast_gains({"clean": clean}, c) is None  # not run yet: no row is invented
    to_base = rd.Contrast("clean - base", ("clean", "bot_grpo_outcome"), ("clean", "base"))
    assert rd.contrast_gains(found, to_base) == pytest.approx([0.05, 0.15, -0.05])
    for run in noisy["algorithms"]["bot_grpo_outcome"]["runs"].values():
        run["curve"][0][1] = 0.5
    with pytest.raises(ValueError, match="different step-0"):
        rd.contrast_gains(found, c)


def test_verdict_with_ten_seeds_follows_the_preregistered_bootstrap_rule():
    assert rd.verdict([0.02, 0.03, 0.04, 0.05, 0.01, 0.02, 0.03, 0.04, 0.05, 0.06]) == "above 0"
    assert rd.verdict([-0.02, -0.03, -0.01, -0.02, -0.04, -0.01, -0.03, -0.02, -0.05, -0.01]) == "below 0"
    assert rd.verdict([-0.05, 0.06, 0.01, -0.02, 0.03, -0.04, 0.02, -0.01, 0.0, 0.01]) == \
        "no difference shown at 10 seeds (interval includes 0)"


def test_sign_flip_p_is_exact_over_every_sign_pattern():
    assert rd.sign_flip_p([0.1, 0.2, 0.3, 0.4, 0.5]) == 2 / 32  # only all-+ and all-- reach |sum| 1.5
    assert rd.sign_flip_p([1.0, 1.0, 1.0, 1.0, -1.0]) == 12 / 32  # |sum| >= 3: one or no sign off, either way
    assert rd.sign_flip_p([0.0, 0.0]) == 1.0
    # a plain loop over the patterns, on uneven values
    values = [0.062, 0.125, 0.004, 0.031, 0.012, -0.02]
    observed = abs(sum(values))
    hits = 0
    for bits in range(2 ** len(values)):
        total = sum(v if bits >> i & 1 else -v for i, v in enumerate(values))
        hits += abs(total) >= observed - 1e-12
    assert rd.sign_flip_p(values) == hits / 64


def test_with_fewer_than_ten_seeds_the_verdict_follows_the_exact_test():
    five = [0.062, 0.125, 0.004, 0.031, 0.012]  # every seed above 0, bootstrap interval above 0 ...
    lo, _ = rd.bootstrap_mean_interval(five)
    assert lo > 0
    # ... but 5 seeds cannot reach p < 0.05: inconclusive, never a tie
    assert rd.verdict(five) == "inconclusive at 5 seeds (exact p = 0.062; 0.0625 at best)"
    assert rd.verdict([0.1, -0.2, 0.3]).startswith("inconclusive at 3 seeds")
    assert rd.verdict([0.02, -0.03, 0.04, 0.05, 0.01, 0.02]) == "no difference shown at 6 seeds (exact p = 0.219)"
    seven = [0.02, 0.03, 0.04, 0.05, 0.01, 0.02, 0.03]
    assert rd.verdict(seven) == "above 0 (exact p = 0.016)"  # 2/128
    assert rd.verdict([-v for v in seven]) == "below 0 (exact p = 0.016)"


def test_the_page_labels_exploratory_contrasts_and_names_the_react_metric_and_the_deviations():
    page = (ROOT / "research" / "results.md").read_text()
    primaries = [c for _, contrasts in rd.CLAIMS for c in contrasts if c.primary]
    assert len(primaries) == 5  # one per plan's setting (issue 46's plan registers a React and a math one)
    for _, contrasts in rd.CLAIMS:
        for c in contrasts:
            assert f"| {c.shown} |" in page
            assert c.shown.endswith("(primary)" if c.primary else "(exploratory)")
    assert "syntax x types x spec" in page and "0.98-0.99" in page
    assert "changed twice" in page and "started and abandoned" in page
    for plan in ("arith_synth_grounded.md", "react_synth_k2_all_presets.md"):
        log = (ROOT / "research" / "preregistration" / plan).read_text().split("## Amendment log", 1)[1]
        assert "2026-12-03" in log
    assert "changed twice" in (ROOT / "research" / "preregistration" / "arith_synth_grounded.md").read_text()
    assert "abandoned" in (ROOT / "research" / "preregistration" / "react_synth_k2_all_presets.md").read_text()


def test_exploratory_contrasts_are_described_and_the_page_never_says_tie():
    assert rd.description([0.1, -0.2, 0.3, 0.0, 0.2]) == \
        "described, not tested: higher on 3 of 5 seeds, lower on 1; inconclusive at 5 seeds"
    page = (ROOT / "research" / "results.md").read_text()
    assert "| tie" not in page and "tie (" not in page  # no verdict cell says tie
    assert "| bot_grpo - base, final `all_ok` (exploratory) |" in page


def test_steps_contrast_pairs_by_seed_and_censors_runs_that_never_reach_the_target():
    data = _set({"grpo": {"0": 0.9, "1": 0.3}, "bot_grpo": {"0": 0.9, "1": 0.9}})
    data["settings"]["targets"] = [0.8]
    for algo, per_seed in (("grpo", {"0": 20, "1": None}), ("bot_grpo", {"0": 10, "1": 30})):
        data["algorithms"][algo]["targets"]["0.8"] = {"per_seed": per_seed}
    c = rd.Contrast("steps", ("x", "bot_grpo"), ("x", "grpo"), primary=True, steps_to="0.8")
    assert rd.contrast_gains({"x": data}, c) == [10 - 20, 30 - (10 + 10)]  # never = steps + spacing


def test_sets_with_the_spec_guard_count_their_gamed_runs():
    data = _set({"grpo": {"0": 0.9, "1": 0.3}, "bot_grpo": {"0": 0.9, "1": 0.9}})
    assert rd.gamed_lines(data) == []  # older sets: no guard measured, nothing said
    for algo, flags in (("grpo", (False, False)), ("bot_grpo", (True, False))):
        for run, gamed in zip(data["algorithms"][algo]["runs"].values(), flags):
            run["guard"] = {"gamed": gamed}
    assert rd.gamed_lines(data)[-1].endswith("`grpo` 0/2, `bot_grpo` 1/2.")


def test_claims_not_run_say_so_instead_of_a_number():
    rows = rd.claims_table({})
    assert len(rows) == 2 + sum(len(contrasts) for _, contrasts in rd.CLAIMS)
    assert all("| not run yet |" in row for row in rows[2:])


def test_curve_cell_is_the_median_over_seeds_at_each_evaluated_step():
    data = _set({"grpo": {"0": 0.1, "1": 0.3, "2": 0.2}}, start=0.15)
    assert rd.median_curve_cell(data["algorithms"]["grpo"]) == "0.150 / 0.200"
    assert rd.steps_cell(data["algorithms"]["grpo"], "0.5", 10) == ">10 (every seed)"
    data = _set({"grpo": {"0": 0.6, "1": 0.3}})
    assert rd.steps_cell(data["algorithms"]["grpo"], "0.5", 10) == "10 / >10"


def test_sooner_follows_the_preregistered_four_of_five_rule():
    def data(per_seed_a, per_seed_b):
        target = lambda per_seed: {"targets": {"0.8": {"per_seed": per_seed}}}  # noqa: E731
        return {"algorithms": {"a": target(per_seed_a), "grpo": target(per_seed_b)}}
    five = {str(s): 20 for s in range(5)}
    assert rd.sooner(data({**five, "0": 10, "1": 10, "2": 10, "3": 10}, five), "a", "grpo", "0.8") == "sooner (4/5 seeds)"
    assert rd.sooner(data({**five, "0": 10, "1": 10, "2": 10}, five), "a", "grpo", "0.8") == "not sooner (3/5 seeds)"
    # reaching it at all beats never; never against never is not sooner
    nevers = {str(s): None for s in range(5)}
    assert rd.sooner(data(five, nevers), "a", "grpo", "0.8") == "sooner (5/5 seeds)"
    assert rd.sooner(data(nevers, nevers), "a", "grpo", "0.8") == "not sooner (0/5 seeds)"


def test_t_interval_is_the_textbook_one_and_wider_than_the_bootstrap_on_five_seeds():
    gains = [0.062, 0.125, 0.004, 0.031, 0.012]
    lo, hi = rd.t_interval(gains)
    assert (round(lo, 3), round(hi, 3)) == (-0.014, 0.108)  # mean 0.0468, sd 0.0491, t(0.975, 4) = 2.776
    blo, bhi = rd.bootstrap_mean_interval(gains)
    assert lo < blo and hi > bhi
