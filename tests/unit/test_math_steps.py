"""Step splitting, equality finding and exact judging of closed-form equalities."""

import pytest

from botgrpo_rewards.math.check import equality_holds
from botgrpo_rewards.math.steps import equations, split_steps


def _eqs(text):
    return [(e.step, e.left, e.right) for e in equations(text, split_steps(text))]


def test_split_on_step_markers():
    text = "Let's go.\nStep 1: a\nmore a\nStep 2: b\n\nStep 3: c"
    spans = split_steps(text)
    assert [text[s:e] for s, e in spans] == ["Let's go.", "Step 1: a\nmore a", "Step 2: b", "Step 3: c"]


def test_split_on_blank_lines_without_markers():
    text = "First.\n\n  Second line\nstill second.\n\n\nThird."
    assert [text[s:e] for s, e in split_steps(text)] == ["First.", "Second line\nstill second.", "Third."]


@pytest.mark.parametrize("text,found", [
    ("We get 3 * 4 = 12 apples.", [(0, "3 * 4", "12")]),
    ("$\\frac{1}{2} + \\frac{1}{3} = \\frac{5}{6}$", [(0, "\\frac{1}{2} + \\frac{1}{3}", "\\frac{5}{6}")]),
    ("Total: 1,000 + 24 = 1024.", [(0, "1000 + 24", "1024")]),  # separators go before parsing
    ("a = 2 + 3 = 5", [(0, "2 + 3", "5")]),
])
def test_finds_closed_form_equalities(text, found):
    assert _eqs(text) == found


@pytest.mark.parametrize("text", [
    "2x + 3 = 7", "f(2) = 5", "8 divided by 2 = 4", "x_1 = 3", "12 = 3x", "12 = 3 times 4",
    "so x - 3 = 5", "the area is 12 = 3 x 4", "3 + 4 ≈ 7.1",
])
def test_skips_fragments_of_larger_expressions(text):
    assert _eqs(text) == []


@pytest.mark.parametrize("left,right,head,verdict", [
    ("3 * 4", "12", None, True),
    ("12 + 5", "18", None, False),
    ("\\frac{1}{2} + \\frac{1}{3}", "\\frac{5}{6}", None, True),
    ("\\frac{1}{2} + \\frac{1}{3}", "\\frac{2}{5}", None, False),
    ("2^{10}", "1024", None, True),
    ("\\sqrt{2}", "1.414", None, True),  # rounded: fine
    ("1/3", "0.3", None, True),  # truncated to one place: within one unit, not penalised
    ("1/3", "0.5", None, False),
    ("3*4", "12 + 5", "12", None),  # running total "3*4 = 12 + 5 = 17": doubt, not false
    ("3*4", "13 + 5", "13", False),
    ("10^{10^{10}}", "1", None, None),  # too big to check: doubt
    ("1/0", "5", None, None),
    ("x + 1", "2", None, None),
])
def test_equality_verdicts(left, right, head, verdict):
    assert equality_holds(left, right, head) is verdict


def _judged(text):
    from botgrpo_rewards.math.check import check_equations

    items = [(e.left, e.right, e.head) for e in equations(text, split_steps(text))]
    return check_equations(items)


@pytest.mark.parametrize("text,verdicts", [
    # written the way GSM8K / MATH solutions write arithmetic
    ("She pays $30 + $40 - $10 = $60 in total.", [True]),
    ("She pays \\$30 + \\$40 - \\$10 = \\$70 in total.", [False]),
    ("Natalia sold 48/2 = <<48/2=24>>24 clips in May.", [True, True]),
    ("She sold 48+24 = <<48+24=70>>70 clips.", [False, False]),
    ("She sold 48+24 = <<48+24=72>>70 clips.", [False, True]),  # the visible text is wrong
    ("The total is 1,000.50 + 24 = 1,024.50 dollars.", [True]),
    ("The total is 1,000.50 + 24 = 1,000.74 dollars.", [False]),
    ("The cost is \\$1{,}200 + \\$300 = \\$1{,}600.", [False]),
    ("So a total of 70 + 420 = 490 apples.", [True]),
    ("So a total of 70 + 420 = 500 apples.", [False]),
    ("\\begin{align*} 3+4 &= 7 \\\\ &= 8 \\end{align*}", [False]),
    # correct notations that are not false equalities
    ("629 ÷ 7 = 89 R 6", []),
    ("200 ÷ 160 = 1 with a remainder of 40", []),
    ("$2\\frac34 = \\frac{11}{4}$", [True]),
    ("$0.1 = 10\\%$", [True]),
    ("$101_2 = 5$", []),
    ("Half of 10 = 5", []),
    ("3 groups of 4 = 12", []),
    ("Then 20% of 50 = 10", []),
    ("The sum of 3 and 4 = 7", []),
])
def test_real_solution_notations(text, verdicts):
    assert _judged(text) == verdicts
