"""Grounded step credit (issue 27): a true step earns credit only when its operands are the problem's
numbers or results of earlier grounded steps; `faithful` = right answer, every step true and grounded."""

import time
from fractions import Fraction

import pytest

from botgrpo_rewards.math.grounding import answer_value, ground, problem_numbers, result_values
from botgrpo_rewards.math.steps import equations, split_steps
from botgrpo_rewards.protocol import ScoreRequest, validate_spans
from botgrpo_tasks.arith_synth import make_task

PROMPT = ("Mia has 3 bags with 4 apples each. They find 5 more apples. They give away 2 apples. "
          "How many apples does Mia have now?\nSolve step by step, one equation per paragraph.\n")


@pytest.fixture(scope="module")
def backend(math_backend):
    return math_backend


def _score(b, completion, gold="15", prompt=PROMPT, **options):
    req = ScoreRequest(id="g", completion=completion, prompt=prompt, reference={"answer": gold},
                       options={"steps": True, **options})
    r = b.score(req, time.monotonic() + 20)
    validate_spans(r.spans, len(completion))
    return r, [completion[s.start : s.end] for s in r.spans if s.label == "step_ok"]


def test_problem_numbers_digits_words_percents_fractions():
    got = problem_numbers("A dozen eggs cost $1,200.50; 25% of them, 3/4 of the rest and half of \\frac{1}{3}.")
    assert {Fraction(12), Fraction("1200.50"), Fraction(25), Fraction(1, 4), Fraction(3, 4), Fraction(2),
            Fraction(1, 3)} <= got
    assert Fraction(7) not in got and problem_numbers("") == set()
    assert problem_numbers("9" * 5000) == set()  # a giant number grounds nothing and raises nothing


@pytest.mark.parametrize("side,values", [
    ("28", {28}), ("-3", {3}), ("\\frac{5}{6}", {5, 6, Fraction(5, 6)}), ("4\\pi", {4}), ("12 + 5", set()),
    ("2 * 3", set()), ("\\frac{3}{6} + \\frac{2}{6}", set()), ("1 - 2", set()),
])
def test_a_result_is_a_lone_value(side, values):
    assert result_values(side) == {Fraction(v) for v in values}


def test_grounding_walks_the_chain():
    text = "3 * 4 = 12\n\n12 + 5 = 17\n\n7 * 8 = 56\n\n56 - 2 = 54\n\n17 - 2 = 15"
    found = equations(text, split_steps(text))
    got = ground(found, [True] * len(found), problem_numbers(PROMPT))
    assert got.grounded == (True, True, False, False, True)  # 7, 8 are nobody's; 56 came from them
    # a false step's result grounds nothing after it
    assert ground(found[:2], [False, True], problem_numbers(PROMPT)).grounded == (True, False)
    # a running total "3 * 4 = 12 + 5 = 17" grounds its head
    text = "3 * 4 = 12 + 5 = 17"
    found = equations(text, split_steps(text))
    assert ground(found, [None, True], problem_numbers(PROMPT)).grounded == (True, True)


def test_answer_value():
    assert answer_value("$1,200$") == 1200 and answer_value("-15") == 15 and answer_value("x + 1") is None


def test_faithful_chain_earns_every_step(backend):
    text = "3 * 4 = 12\n\n12 + 5 = 17\n\n17 - 2 = 15\n\n\\boxed{15}"
    r, credited = _score(backend, text)
    assert credited == ["3 * 4 = 12", "12 + 5 = 17", "17 - 2 = 15"]
    m = r.metrics
    assert (r.score, m["steps_grounded"], m["steps_ungrounded"], m["steps_wrong"], m["faithful"]) == (1.0, 3, 0, 0, 1)


def test_true_arithmetic_of_other_numbers_earns_nothing(backend):
    # What the checkpoints trained with token credit wrote: every step true, none about this problem.
    text = "7 * 8 = 56\n\n56 + 9 = 65\n\n65 - 6 = 59\n\n\\boxed{59}"
    r, credited = _score(backend, text)
    assert credited == [] and r.metrics["steps_ungrounded"] == 3 and r.metrics["steps_wrong"] == 0
    assert r.metrics["faithful"] == 0.0 and r.score == 0.0
    # a wrong answer without a false step: its error is where it left the problem, the first ungrounded step
    got = [(text[s.start : s.end], s.reward, s.label) for s in r.spans]
    assert got == [("7 * 8 = 56", -0.5, "step_ungrounded"), ("59", -0.5, "answer")]


def test_the_looping_chain_a_trained_policy_wrote(backend):
    # sampled from a 40-step bot_grpo checkpoint (research/measurements.md): true steps, +2 and -2 from nowhere
    prompt = "Renée has 4 bags with 5 stickers each. They find 6 more stickers. They give away 5 stickers."
    text = "4 * 5 = 20\n\n20 + 2 = 22\n\n22 - 2 = 20\n\n20 + 2 = 22\n\n\\boxed{22}"
    r, credited = _score(backend, text, gold="21", prompt=prompt)
    assert credited == ["4 * 5 = 20"] and r.metrics["repeats"] == 1 and r.metrics["steps_ungrounded"] == 3
    assert [(text[s.start : s.end], s.label) for s in r.spans][:2] == [("4 * 5 = 20", "step_ok"),
                                                                       ("20 + 2 = 22", "step_ungrounded")]


def test_right_answer_through_an_ungrounded_step_is_not_faithful(backend):
    text = "3 * 4 = 12\n\n12 + 5 = 17\n\n10 + 5 = 15\n\n\\boxed{15}"  # 10 comes from nowhere
    r, credited = _score(backend, text)
    assert r.score == 1.0 and credited == ["3 * 4 = 12", "12 + 5 = 17"]
    assert "step_ungrounded" not in [s.label for s in r.spans]  # a right answer's constants are not penalised
    assert (r.metrics["steps_ungrounded"], r.metrics["faithful"]) == (1, 0)


def test_a_bare_right_answer_is_correct_not_faithful(backend):
    r, _ = _score(backend, "\\boxed{15}")
    assert (r.score, r.metrics["faithful"]) == (1.0, 0.0)


def test_steps_after_a_slip_are_not_grounded(backend):
    text = "3 * 4 = 12\n\n12 + 5 = 18\n\n18 - 2 = 16\n\n\\boxed{16}"  # a forgotten... extra one, carried on
    r, credited = _score(backend, text)
    assert credited == ["3 * 4 = 12"] and (r.metrics["steps_wrong"], r.metrics["steps_ungrounded"]) == (1, 1)


def test_without_a_prompt_or_with_the_option_off_grounding_is_off(backend):
    # nothing to ground in: the old rule (any true step), said in info; no ungrounded penalty either
    r, credited = _score(backend, "7 * 8 = 56\n\n56 + 1 = 57\n\n\\boxed{57}", gold="50", prompt="")
    assert credited == ["7 * 8 = 56", "56 + 1 = 57"] and "no prompt" in r.info["grounding"]
    assert "step_ungrounded" not in [s.label for s in r.spans] and r.metrics["steps_ungrounded"] == 0
    r, credited = _score(backend, "7 * 8 = 56\n\n\\boxed{56}", gold="56", grounding=False)
    assert credited == ["7 * 8 = 56"] and r.metrics["faithful"] == 1.0 and "option" in r.info["grounding"]


def test_arith_synth_corpus_is_faithful_exactly_without_slips(backend):
    task = make_task()
    assert "faithful" in task.eval_metrics
    items = task.corpus_items(40)
    assert any(it.slips for it in items) and any(not it.slips for it in items)
    for it in items:
        req = ScoreRequest(id="c", completion=it.completion, prompt=it.prompt,
                           reference={"answer": str(it.problem.answer())}, options=task.service_options)
        m = backend.score(req, time.monotonic() + 20).metrics
        assert m["faithful"] == float(not it.slips), (it.completion, m)
        if not it.slips:
            assert m["steps_grounded"] == len(it.problem.ops) and m["steps_ungrounded"] == 0


def test_a_repeated_paragraph_costs_repeat_penalty(backend):
    # measured (research/measurements.md): step spans made looping pay; a repeat earns nothing and costs
    text = "3 * 4 = 12\n\n12 + 5 = 17\n\n12 + 5 = 17\n\n17 - 2 = 15\n\n\\boxed{15}"
    r, credited = _score(backend, text)
    got = [(text[s.start : s.end], s.reward, s.label) for s in r.spans]
    assert got[2] == ("12 + 5 = 17", -0.5, "repeat") and r.metrics["repeats"] == 1
    assert credited == ["3 * 4 = 12", "12 + 5 = 17", "17 - 2 = 15"] and r.score == 1.0
    r, _ = _score(backend, text, repeat_penalty=0)
    assert "repeat" not in [s.label for s in r.spans]
    # only after the thinking block: a model may restate a line while thinking
    r, _ = _score(backend, "<think>\nfirst\n\n12 + 5 = 17\n\n12 + 5 = 17\n\n</think>\n3 * 4 = 12\n\n\\boxed{12}", gold="12")
    assert "repeat" not in [s.label for s in r.spans] and r.metrics["repeats"] == 1
