"""Final-answer extraction: boxes, hedging, unbalanced braces, phrases, spans."""

import pytest

from botgrpo_rewards.math.extract import extract_answer


def _answer(text):
    found = extract_answer(text)
    if found.answer is not None:
        assert text[found.start : found.end] == found.answer  # the span is exactly the answer
    return found


@pytest.mark.parametrize("text,answer", [
    ("so the result is \\boxed{42}.", "42"),
    ("\\boxed{\\frac{1}{2}}", "\\frac{1}{2}"),
    ("nested \\boxed{\\left\\{1, \\frac{a}{b}\\right\\}} end", "\\left\\{1, \\frac{a}{b}\\right\\}"),
    ("\\fbox{7}", "7"),
    ("\\boxed{ 5 }", "5"),
    ("first \\boxed{3}\n\nWait, I made an error. It is \\boxed{4}.", "4"),
    ("so \\boxed{3} and again \\boxed{ 3 }", "3"),
    ("outer \\boxed{\\boxed{9}}", "\\boxed{9}"),
    ("The final answer is 17.", "17"),
    ("The final answer is: $\\frac{3}{4}$.", "\\frac{3}{4}"),
    ("Answer: 12 cm", "12 cm"),
    ("work...\n#### 1,000", "1,000"),
    ("The answer is 5.\nActually the answer is 6.", "6"),
    ("so the answer is $x = 2$", "x = 2"),
])
def test_extracts(text, answer):
    assert _answer(text).answer == answer


@pytest.mark.parametrize("text,why", [
    ("I think \\boxed{3} or maybe \\boxed{4}", "different"),
    ("\\boxed{3} and \\boxed{4}", "different"),
    ("\\boxed{\\frac{1}{2}", "unbalanced"),
    ("\\boxed{3}\n\nthen \\boxed{4", "unbalanced"),
    ("no answer here, 3 + 4 = 7", "no \\boxed"),
    ("\\boxed{}", "empty"),
    ("The final answer is", "without"),
])
def test_no_answer(text, why):
    found = _answer(text)
    assert found.answer is None and why in found.reason


def test_span_is_in_code_points():
    text = "π≈3.14 😀 so \\boxed{7}"
    found = extract_answer(text)
    assert (found.start, found.end) == (text.index("7"), text.index("7") + 1)


def test_closed_box_before_an_unclosed_one_in_math_is_not_hedging():
    # an unclosed brace *before* the final box does not hide it
    assert extract_answer("\\boxed{2 is \\left{ wrong}\n\nso \\boxed{5}").answer == "5"


def test_large_and_deep_inputs_are_linear():
    import time

    start = time.monotonic()
    assert extract_answer("x" * 1_000_000 + "\\boxed{1}").answer == "1"
    assert extract_answer("\\boxed{" * 100_000).answer is None
    deep = "\\boxed{" + "{" * 5000 + "1" + "}" * 5000 + "}"
    assert extract_answer(deep).answer.startswith("{{{")
    assert time.monotonic() - start < 3.0
