"""Pure parts of the react backend: code extraction, UTF-16 mapping, span rules, options."""

from __future__ import annotations

import pytest

from botgrpo_rewards.backend import BackendError
from botgrpo_rewards.react.extract import Utf16Map, extract_code
from botgrpo_rewards.react.verdict import ReactOptions, diagnostic_range, disjoint, syntax_span, verdict

F = "```"


@pytest.mark.parametrize(
    "completion,code",
    [
        (f"intro\n{F}tsx\nA\n{F}\nouttro", "A\n"),
        (f"{F}python\nx = 1\n{F}\n{F}TypeScript\nB\n{F}\n", "B\n"),  # a tagged block beats position
        (f"{F}\nU\n{F}\n{F}jsx\nJ\n{F}\n", "J\n"),  # a code-tagged block beats an untagged one
        (f"{F}bash\nls\n{F}\n{F}\nU\n{F}\n", "U\n"),  # else the first untagged block
        (f"prose\n{F}ts\nT\nrest", "T\nrest"),  # a fence left open runs to the end
        ("no fences here", "no fences here"),
        (f"{F}js\n{F}\n", ""),
    ],
)
def test_extract_code(completion, code):
    got, offset = extract_code(completion)
    assert got == code and completion[offset : offset + len(code)] == code


def test_extract_offset_counts_code_points():
    completion = f"😀 é 𝒳\n{F}tsx\nX\n{F}"
    code, offset = extract_code(completion)
    assert code == "X\n" and offset == completion.index("X")


def test_utf16_map_astral_and_lone_surrogates():
    text = "a😀b\ud800c𝄞"  # UTF-16 units: a | 😀😀 | b | \ud800 | c | 𝄞𝄞
    m = Utf16Map(text)
    assert [m.to_cp(u) for u in (0, 1, 3, 4, 5, 6, 8)] == [0, 1, 2, 3, 4, 5, 6]
    assert m.to_cp(2) == 2  # inside a surrogate pair: rounds up to the next character
    assert Utf16Map("plain").to_cp(99) == 5


def test_syntax_span_runs_to_line_end():
    text = "ab\ncd = ;\nef"
    assert syntax_span(text, 6, 0, len(text)) == (6, 9)


def test_syntax_span_at_line_end_or_eof_covers_last_content_line():
    text = "x\n  return 1;\n\n"
    assert syntax_span(text, len(text), 0, len(text)) == (4, 13)
    assert syntax_span("a\r\nb c\r\n", 6, 0, 8) == (3, 6)


def test_diagnostic_range_empty_covers_identifier():
    text = "foo(barBaz$1 + 2)"
    assert diagnostic_range(text, 4, 4, len(text)) == (4, 12)
    assert diagnostic_range(text, 3, 3, len(text)) == (3, 4)  # no identifier: one character
    assert diagnostic_range(text, 4, 7, len(text)) == (4, 7)


def test_disjoint_dedupes_sorts_and_trims():
    got = disjoint([(10, 20, "b"), (0, 5, "a"), (10, 12, "dup"), (3, 8, "c"), (15, 18, "inside")])
    assert got == [(0, 5, "a"), (5, 8, "c"), (10, 20, "b")]


def test_options_defaults_and_validation():
    assert ReactOptions.parse({}) == ReactOptions(True, 5, 0.5, 0.5)
    for bad in ({"typo": 1}, {"types": "no"}, {"max_type_errors": 2.5}, {"syntax_weight": -0.1},
                {"syntax_weight": 0.7, "types_weight": 0.7}, {"types_weight": float("nan")}):
        with pytest.raises(BackendError) as err:
            ReactOptions.parse(bad)
        assert err.value.type == "bad_request"


CODE = "export function A() {\n  return <div>{x}</div>;\n}\n"
CLEAN = {"component": True, "syntax": None, "types": [], "n_type_errors": 0}
TYPE_ERROR = {"component": True, "syntax": None, "n_type_errors": 1,
              "types": [{"start": 32, "length": 1, "code": "TS2304", "message": "Cannot find name 'x'."}]}
SYNTAX_ERROR = {"component": True, "syntax": {"start": 30, "message": "Expected '}'"}, "types": [], "n_type_errors": 0}
NO_COMPONENT = {"component": False, "syntax": None, "types": [], "n_type_errors": 0}


@pytest.mark.parametrize("found, compiled", [(CLEAN, 1.0), (TYPE_ERROR, 0.0), (SYNTAX_ERROR, 0.0), (NO_COMPONENT, 0.0)])
def test_compile_is_parses_and_type_checks(found, compiled):
    metrics = verdict(CODE, CODE, 0, found, ReactOptions()).metrics
    assert metrics["compile"] == compiled == metrics["syntax_ok"] * metrics["types_ok"]


def test_compile_absent_without_the_type_stage():
    """Syntax alone is not the compile rate: with types off neither types_ok nor compile is reported."""
    for found in (CLEAN, SYNTAX_ERROR):
        assert "compile" not in verdict(CODE, CODE, 0, found, ReactOptions(types=False)).metrics
