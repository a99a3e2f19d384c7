"""reward.function as TRL's reward_funcs (a spec, a list, Python callables) with reward.weights, the
memory bound's setting, and what the figures built from per-function metrics show."""

from __future__ import annotations

import pytest

from botgrpo_cli.config import load_config, validate
from botgrpo_cli.errors import UserError


def test_a_list_of_functions_with_weights_from_set_and_callables_from_python():
    cfg = load_config(None, sets=["reward.function=[a.py:f, b.py:g]", "reward.weights=[1, 0.5]"])
    assert cfg.reward.function == ["a.py:f", "b.py:g"] and cfg.reward.weights == [1, 0.5]
    cfg.reward.function = [lambda completions, **kw: [0.0] * len(completions), "a.py:f"]
    validate(cfg)
    assert "<callable " in cfg.to_yaml() and "<lambda>>" in cfg.to_yaml()  # written by name, not lost


@pytest.mark.parametrize("sets, needle", [
    (["reward.function=[a.py:f, b.py:g]", "reward.weights=[1]"], "must be 2 finite number(s), one per reward.function"),
    (["reward.function=[a.py:f, nocolon]"], "must be MODULE:NAME or path/to/file.py:NAME, a callable"),
    (["reward.weights=[1]"], "weighs the reward.function entries"),
    (["reward.function=a.py:f", "reward.function_memory_mb=-1"], "must be a number of MB >= 0"),
])
def test_bad_function_settings_are_one_line(sets, needle):
    with pytest.raises(UserError) as err:
        validate(load_config(None, sets=sets))
    assert needle in str(err.value) and "\n" not in str(err.value)


def test_figures_find_each_function_and_the_rewards_own_metrics():
    from botgrpo_cli.evaluation.curves import function_keys, reward_metric_keys

    records = [{"step": 1, "reward/mean": 3.0, "reward/std": 1.0, "reward/masked": 0.0, "reward/len/mean": -2.0,
                "reward/len/std": 0.5, "reward/len/failed": 0.0, "reward/<lambda>/mean": 1.0, "reward/longest": 9.0,
                "reward/math/correct": 0.5, "reward/token_mean": 3.0}]
    assert function_keys(records) == {"<lambda>": "reward/<lambda>/mean", "len": "reward/len/mean"}
    assert reward_metric_keys(records) == ["reward/longest", "reward/math/correct"]


def test_the_samples_page_shows_each_functions_score_and_the_rows_metrics(tmp_path):
    from botgrpo_cli.trainer.samples import SamplesPage

    page = SamplesPage(tmp_path / "samples.html", "t")
    page.add(1, [{"question": "q", "prompt": "q", "reference": {}, "text": "ab", "offsets": [(0, 1), (1, 2)],
                  "rewards": [30.0, 30.0], "advantages": [0.1, 0.1], "score": 30.0, "status": "ok",
                  "by_function": {"unique": 28.0, "half": "none", "slow": "timeout"},
                  "metrics": {"unique/score": 28.0, "longest": 9.0}, "info": {"verdict": "<b>ok</b>"}}])
    html = (tmp_path / "samples.html").read_text()
    assert ("score +30.000 (ok) · by function: unique +28.000, half none, slow timeout · metrics: longest +9.000 · "
            "verdict: &lt;b&gt;ok&lt;/b&gt;") in html  # log_extra's columns and info, escaped
