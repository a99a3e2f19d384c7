"""The answer checker against a hand-graded table, and the safe parser's caps."""

import time

import pytest
import sympy

from botgrpo_rewards.math.answer import shape
from math_cases import CASES
from botgrpo_rewards.math.compare import answers_equal
from botgrpo_rewards.math.parse import ParseError, TooBig, parse


def test_table_is_large_and_covers_every_category():
    assert len(CASES) >= 100
    cats = {c for c, *_ in CASES}
    assert {"integer", "fraction", "radical", "pi", "decimal", "percent", "units", "equation",
            "roots", "tuple", "interval", "set", "hostile"} <= cats
    assert sum(ok for *_, ok in CASES) > 30 and sum(not ok for *_, ok in CASES) > 30


@pytest.mark.parametrize("category,gold,answer,expected", CASES, ids=[f"{c}-{i}" for i, (c, *_) in enumerate(CASES)])
def test_graded_pair(category, gold, answer, expected):
    correct, reason = answers_equal(answer, gold)
    assert correct is expected, (gold, answer, reason)


def test_parser_builds_exact_values():
    assert parse("033").value == 33
    assert parse("\\frac{1}{2}+\\frac{1}{3}").value == sympy.Rational(5, 6)
    assert parse("2\\sqrt{3}").value == 2 * sympy.sqrt(3)
    assert parse("3\\pi").value == 3 * sympy.pi
    p = parse("3.140")
    assert (p.decimals, p.sig_digits, p.value) == (3, 4, sympy.Rational(157, 50))
    assert parse("50\\%").percent and parse("50\\%").value == 50


@pytest.mark.parametrize("text", ["10^{10^{10^{10}}}", "100000!", "9^{9^{9}}", "2^{1000000}",
                                  "1" * 500, "(" * 60 + "1" + ")" * 60, "x" * 700, "\\sqrt[1000]{2}"])
def test_caps_refuse_hostile_sizes_quickly(text):
    start = time.process_time()  # CPU time, so machine load cannot fail it
    with pytest.raises(TooBig):
        parse(text)
    assert time.process_time() - start < 0.5


@pytest.mark.parametrize("text", ["__import__('os')", "os.system('ls')", "lambda: 1", "exec", "a.b",
                                  "x = 1", "2 3", "\\int x", "[1]"])
def test_parser_rejects_anything_outside_the_grammar(text):
    with pytest.raises(ParseError):
        parse(text)


def test_no_side_effect_from_injection(tmp_path):
    target = tmp_path / "pwned"
    payload = f"__import__('os').system('touch {target}')"
    for answer in (payload, f"\\boxed{{{payload}}}", f"({payload}, 1)", f"x = {payload}"):
        assert answers_equal(answer, "0")[0] is False
    assert not target.exists()


def test_shapes():
    assert shape("x=1, x=2").kind == "list"
    assert shape("\\{1,2\\}").kind == "set"
    assert shape("[1, 2)") == shape("[1,2)")
    assert shape("(1, 2)").kind == "tuple"
    assert shape("(1) + (2)").kind == "scalar"
    assert shape("(0,1) \\cup (2,3)").kind == "union"
