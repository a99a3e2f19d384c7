"""How a user's reward function is found and called: TRL's batch call (only the keywords a
function names, unless it takes **kwargs) and verl's per-completion compute_score."""

from __future__ import annotations

import pytest

from botgrpo_rewards.protocol.function_loader import FunctionLoadError, call_batch, load_function, split_spec


def test_trl_call_passes_columns_as_keyword_lists():
    seen = {}

    def with_kwargs(prompts, completions, **kwargs):
        seen.update(kwargs, prompts=prompts)
        return [1.0] * len(completions)

    def named_only(completions, answer):
        return [float(c == a) for c, a in zip(completions, answer)]

    columns = {"answer": ["1", "2"], "level": [0, 1]}
    assert call_batch(with_kwargs, ["p1", "p2"], ["1", "3"], columns) == [1.0, 1.0]
    assert seen == {"answer": ["1", "2"], "level": [0, 1], "prompts": ["p1", "p2"]}
    assert call_batch(named_only, ["p1", "p2"], ["1", "3"], columns) == [1.0, 0.0]


def test_verl_compute_score_is_called_per_completion_with_its_ground_truth():
    def compute_score(data_source, solution_str, ground_truth, extra_info=None):
        return {"score": float(solution_str.endswith(ground_truth)), "acc": 1.0, "source": data_source}

    columns = {"data_source": ["gsm8k", "gsm8k"], "reward_model": [{"ground_truth": "4"}, {"ground_truth": "5"}],
               "extra_info": [{"index": 0}, {"index": 1}]}
    got = call_batch(compute_score, ["", ""], ["so 4", "so 6"], columns)
    assert [g["score"] for g in got] == [1.0, 0.0] and got[0]["source"] == "gsm8k"


def test_a_wrong_length_or_a_missing_function_says_so(tmp_path):
    with pytest.raises(ValueError, match="returned 1 items for 2 completions"):
        call_batch(lambda completions, **kw: [1.0], ["", ""], ["a", "b"], {})
    with pytest.raises(FunctionLoadError, match="not MODULE:NAME"):
        split_spec("no_colon")
    (tmp_path / "r.py").write_text("def f(completions, **kw):\n    return [0.0] * len(completions)\n")
    assert load_function(f"{tmp_path}/r.py:f")(completions=["x"]) == [0.0]
    with pytest.raises(FunctionLoadError, match="has no function 'g'"):
        load_function(f"{tmp_path}/r.py:g")
