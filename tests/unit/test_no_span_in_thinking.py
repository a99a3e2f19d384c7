"""No span of any service lands inside a thinking block (issue 27 part 3): the reasoning is never
graded, so neither its steps nor its last line carry a reward. Math through MathBackend, React
through the shared started backend (tests/conftest.py, real Node)."""

from __future__ import annotations

import time

import pytest

from botgrpo_rewards.math.extract import answer_bounds
from botgrpo_rewards.protocol import ScoreRequest, validate_spans

PROMPT = "Mia has 3 bags with 4 apples each. They find 5 more apples. How many apples does Mia have?"
# (completion, think_open): shapes reasoning models write, with false and true steps inside the block
MATH = [
    ("<think>\n2 + 2 = 5\n\n3 * 4 = 12</think>\n3 * 4 = 12\n\n12 + 5 = 17\n\n\\boxed{17}", False),
    ("<think>\n2 + 2 = 5\n\n3 * 4 = 12\n\n12 + 5 = 17", False),  # cut off while thinking
    ("<think>\n3 * 4 = 12\n\n12 + 5 = 17\n\n\\boxed{17}", False),  # the answer inside an open block
    ("3 * 4 = 13\n\n13 + 5 = 18\n</think>\n12 + 5 = 17\n\n\\boxed{17}", True),  # the prompt opened it
    ("3 * 4 = 12\n\n12 + 5 = 17, still thinking", True),
    ("<think>3 * 4 = 12</think>", False),  # nothing after the block
    ("<think>a</think>\n\n3 * 4 = 12\n\n<think>\n2 + 2 = 5\n\n\\boxed{12}", False),  # reopened, never closed
]


@pytest.mark.parametrize("completion,opened", MATH)
@pytest.mark.parametrize("options", [{"steps": True}, {"steps": True, "penalize_missing": False}, {}])
def test_math_spans_stay_after_the_reasoning(math_backend, completion, opened, options):
    req = ScoreRequest(id="t", completion=completion, prompt=PROMPT, reference={"answer": "17"},
                       options={**options, "think_open": opened})
    r = math_backend.score(req, time.monotonic() + 20)
    validate_spans(r.spans, len(completion))
    start, _ = answer_bounds(completion, ("<think>", "</think>"), opened)
    assert all(s.start >= start for s in r.spans), [(completion[s.start : s.end], s.label) for s in r.spans]
    assert not any("<think>" in completion[s.start : s.end] or "</think>" in completion[s.start : s.end]
                   for s in r.spans)
    if start == len(completion):  # still thinking: no attempt, scored through missing_score only
        assert r.spans == [] and r.score == -1.0 and r.metrics["steps"] == 0


def test_math_steps_after_the_block_are_still_checked(math_backend):
    text = "<think>\n3 * 4 = 12</think>\n3 * 4 = 13\n\n13 + 5 = 18\n\n\\boxed{18}"
    r = math_backend.score(ScoreRequest(id="t", completion=text, prompt=PROMPT, reference={"answer": "17"},
                                        options={"steps": True}), time.monotonic() + 20)
    assert [(text[s.start : s.end], s.label) for s in r.spans] == [("3 * 4 = 13", "step"), ("18", "answer")]


F = "```"
BROKEN = "export function Hello() {\n  return <h1>Hi</h1;\n}\n"
GOOD = "export function Hello() {\n  return <h1>Hi</h1>;\n}\n"


@pytest.mark.parametrize("completion", [
    f"<think>\n{F}tsx\n{BROKEN}{F}\n</think>\n{F}tsx\n{BROKEN}{F}\n",
    f"<think>\n{F}tsx\n{BROKEN}{F}\n",
    f"<think>\n{F}tsx\n{BROKEN}{F}\n</think>\n{F}tsx\n{GOOD}{F}\n",
])
def test_react_spans_stay_after_the_reasoning(react_backend, completion):
    r = react_backend.score(ScoreRequest(id="t", completion=completion, deadline_ms=30_000), time.monotonic() + 30)
    close = completion.find("</think>")
    start = close + len("</think>") if close >= 0 else len(completion)
    assert all(s.start >= start for s in r.spans), r.spans
