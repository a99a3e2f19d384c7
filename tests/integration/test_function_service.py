"""Service `function` through the real client: what a reward function may return, and what
happens to a completion for each (ok with spans and metrics, or a masked failure that says why)."""

from __future__ import annotations

from pathlib import Path

import pytest

from botgrpo_cli.reward_client import RewardPool
from botgrpo_cli.reward_client.opening import function_command

FUNCTION = '''
def reward(prompts, completions, answer):  # no **kwargs: only the named columns are passed
    out = []
    for c, a in zip(list(completions), answer):
        out.append({"none": None, "big": 2.0, "text": "1.0", "past": {"score": 0.5, "spans": [{"start": 0, "end": 99, "reward": 0.1}]},
                    "float": {"score": 0.5, "spans": [{"start": 0.6, "end": 2.7, "reward": 0.1}]},
                    "dict": {"score": -0.25, "spans": [{"start": 1, "end": 3, "reward": 0.5, "label": "x"}],
                             "metrics": {"success": 1.0, "n": 2}, "info": {"why": "ok"}}}.get(c, float(c == a)))
    completions.clear()  # its own copy: emptying it changes nothing the service counts
    return out
'''


@pytest.fixture(scope="module")
def pool(tmp_path_factory):
    path = tmp_path_factory.mktemp("fn") / "fn.py"
    path.write_text(FUNCTION)
    with RewardPool("function", command=function_command(f"{path}:reward")) as running:
        yield running


def _score(pool, *completions):
    return pool.score([{"id": i, "completion": c, "reference": {"answer": "7", "unused": 1}}
                       for i, c in enumerate(completions)])


def test_numbers_dicts_and_what_is_not_a_score(pool):
    plain, wrong, full, none, big, text, past, floats = _score(pool, "7", "8", "dict", "none", "big", "text", "past",
                                                               "float")
    assert (plain.status, plain.score, plain.metrics) == ("ok", 1.0, {})  # success only when the function says
    assert (wrong.score, wrong.metrics) == (0.0, {})
    assert full.score == -0.25 and [(s.start, s.end, s.reward, s.label) for s in full.spans] == [(1, 3, 0.5, "x")]
    assert full.metrics == {"success": 1.0, "n": 2.0} and full.info == {"why": "ok"}
    assert none.status == "error" and none.error.type == "not_scorable"
    assert big.error.type == "bad_result" and "score" in big.error.message
    assert text.error.type == "bad_result" and "str" in text.error.message
    assert past.error.type == "bad_result" and not past.usable
    assert floats.error.type == "bad_result" and "offsets must be integers" in floats.error.message


def test_a_function_that_does_not_load_stops_the_start_with_one_line(tmp_path):
    from botgrpo_cli.reward_client import ServiceStartError

    (tmp_path / "broken.py").write_text("import not_a_module_anywhere\n")
    with pytest.raises(ServiceStartError, match="not_a_module_anywhere"):
        RewardPool("function", command=function_command(f"{tmp_path}/broken.py:reward"))


def test_several_functions_weighted_through_reward_services():
    from botgrpo_cli.reward_client.opening import open_pool

    example = Path(__file__).resolve().parents[2] / "examples" / "extending" / "reward_function.py"
    services = {"correct": {"function": f"{example}:contains_answer"},
                "short": {"function": f"{example}:brevity", "weight": 0.5}}
    with open_pool("correct", 1, None, services) as pool:
        (resp,) = pool.score([{"id": 1, "completion": "x" * 250 + " 7", "reference": {"answer": "7"}}])
    assert resp.ok and resp.score == pytest.approx(1.0 + 0.5 * (1 - 252 / 500))
    assert resp.metrics["correct/score"] == 1.0 and resp.metrics["short/score"] == pytest.approx(1 - 252 / 500)
