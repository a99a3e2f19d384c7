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


# Solutions a human grader accepted, written as GSM8K and MATH / PRM800K solutions are: no step is flagged.
ACCEPTED = [
    "Janet's ducks lay 16 eggs per day. She eats 3 and bakes 4, so she uses 3 + 4 = <<3+4=7>>7 eggs.\n"
    "She sells 16 - 7 = <<16-7=9>>9 eggs.\nShe makes 9 * 2 = $<<9*2=18>>18 every day.\n#### 18",
    "A robe takes 2 bolts of blue fiber and half that much white fiber, so 2/2 = <<2/2=1>>1 bolt.\n"
    "In total it takes 2 + 1 = <<2+1=3>>3 bolts.\n#### 3",
    "Step 1: The shirts cost $12.50 * 4 = $50.\nStep 2: With the $1,200 budget, $1,200 - $50 = $1,150 remains.\n"
    "Step 3: That is a total of 1,150 + 0 = 1,150 dollars.",
    "She can fill 100/3 = 33 whole jars, with 100 - 99 = 1 ounce left over.",
    "Dividing, 629 ÷ 7 = 89 R 6, so 89 full boxes.",
    "So 200 ÷ 160 = 1 with a remainder of 40.",
    "The mixed number is $2\\frac34 = \\frac{11}{4}$.",
    "A tenth is $0.1 = 10\\%$ of the whole, and $\\frac{1}{3} = 33\\%$ roughly; 0.25 = 25 percent.",
    "In base two, $101_2 = 5$ and $11_2 + 1_2 = 100_2$.",
    "The ratio 3:4 = 6:8 holds, and the meeting at 3:30 = half past three.",
    "Half of 10 = 5 and 3 groups of 4 = 12, and 20% of 50 = 10.",
    "We have $\\binom{5}{2} = 10$ pairs, and $\\frac{1}{2} \\cdot 6 \\cdot 4 = 12$.",
    "\\begin{align*} \\sqrt{(2-(-4))^2 + (-9)^2} &= \\sqrt{36 + 81} \\\\ &= \\sqrt{117} \\end{align*}",
    "Then $f(3) = 2(3) + 1 = 7$, and $x^2 = 4$ gives $x = 2$.",
    "Rounding, 22/7 = 3.14 and 10/3 = 3.3, while 1/3 = 0.33.",
    "The sum is 3*4 = 12 + 5 = 17.",
]

# Solutions with a false closed-form equality; the index of the first wrong step.
FIRST_ERRORS = [
    ("She uses 3 + 4 = <<3+4=8>>8 eggs.\n\nShe sells 16 - 8 = <<16-8=8>>8 eggs.", 0),
    ("Each costs $5.\n\nFour cost $5 * 4 = $25.\n\nSo she pays $25.", 1),
    ("Step 1: 45 + 55 = 100.\nStep 2: 100 * 3 = 310.\nStep 3: So 310 apples.", 1),
    ("First, $2^5 = 32$.\n\nThen $\\sqrt{49} = 6$.\n\nSo the answer is 38.", 1),
    ("We get $\\frac{3}{4} \\cdot 8 = 5$.", 0),
    ("So $5^2 + 12^2 = 170$.", 0),
    ("There are $\\binom{5}{2} = 20$ pairs.", 0),
    ("The total cost is 1,250 + 750 = 1,900 dollars.", 0),
    ("She earns a total of 70 + 420 = 500 dollars.", 0),
    ("That leaves 12 ÷ 4 = 4 slices each.", 0),
    ("So 0.2 = 2% of the class.", 0),
    ("The area is $3 \\times 7 = 24$ square units.", 0),
]


def _flagged_steps(text):
    from botgrpo_rewards.math.check import check_equations

    found = equations(text, split_steps(text))
    verdicts = check_equations([(e.left, e.right, e.head) for e in found])
    return sorted({e.step for e, v in zip(found, verdicts) if v is False})


@pytest.mark.parametrize("text", ACCEPTED)
def test_accepted_solutions_are_not_flagged(text):
    assert _flagged_steps(text) == []


@pytest.mark.parametrize("text,first", FIRST_ERRORS)
def test_false_equalities_are_found_at_the_first_wrong_step(text, first):
    assert _flagged_steps(text)[:1] == [first]
