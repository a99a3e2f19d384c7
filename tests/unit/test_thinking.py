"""Where the answer of a reasoning model starts, and the react / render services reading only it
(real Node and Chromium)."""

from __future__ import annotations

import time

import pytest

from botgrpo_rewards.backend import BackendError
from botgrpo_rewards.protocol import ScoreRequest
from botgrpo_rewards.protocol import split_reasoning
from botgrpo_rewards.thinking import think_options

# (completion, opened by the prompt) -> (answer text, truncated); shapes real reasoning models write:
# DeepSeek-R1 / Qwen3 close the block and answer after it; R1's template opens it in the prompt.
CASES = [
    ("The answer is \\boxed{4}.", False, "The answer is \\boxed{4}.", False),
    ("<think>\n2+2 is 4, so \\boxed{4}\n</think>\n\nThe answer is \\boxed{5}.", False,
     "\n\nThe answer is \\boxed{5}.", False),
    ("<think>\nlong reasoning with \\boxed{84} cut off by the len", False, "", True),
    ("so it is 4\n</think>\n\\boxed{4}", True, "\n\\boxed{4}", False),
    ("so it is 4, still thinking", True, "", True),
    ("no open tag but </think> \\boxed{4}", False, " \\boxed{4}", False),  # template opened it, unseen
    ("<think>a</think>b</think>c", False, "b</think>c", False),  # the first close ends the reasoning
    ("<think></think>\n\nx", False, "\n\nx", False),  # Qwen3 with enable_thinking=false
]


@pytest.mark.parametrize("text,opened,answer,truncated", CASES)
def test_split_reasoning(text, opened, answer, truncated):
    r = split_reasoning(text, opened=opened)
    assert (text[r.answer_start:], r.truncated) == (answer, truncated)


def test_tags_are_configurable_and_can_be_off():
    text = "<reasoning>x</reasoning>y"
    assert text[split_reasoning(text, ("<reasoning>", "</reasoning>")).answer_start:] == "y"
    assert split_reasoning("<think>x", None).answer_start == 0
    assert think_options({"think_tags": None}) == (None, False)
    for bad in ({"think_tags": "<think>"}, {"think_tags": ["<think>"]}, {"think_tags": ["", "</think>"]},
                {"think_open": "yes"}):
        with pytest.raises(BackendError):
            think_options(bad)


F = "```"
GOOD = "export function Hello() {\n  return <h1>Hi</h1>;\n}\n"
BROKEN = "export function Hello() {\n  return <h1>Hi</h1;\n}\n"


def _request(completion: str, **options) -> ScoreRequest:
    return ScoreRequest(id="t", completion=completion, options=options, deadline_ms=30_000)


@pytest.fixture(scope="module")
def react(react_backend):
    """The shared started react backend (tests/conftest.py), under a short name."""
    return react_backend


def test_react_reads_code_after_the_reasoning_only(react):
    # Broken draft inside the reasoning, correct answer after it: full marks, no span in the reasoning.
    text = f"<think>\nfirst try:\n{F}tsx\n{BROKEN}{F}\n</think>\n{F}tsx\n{GOOD}{F}\n"
    res = react.score(_request(text), time.monotonic() + 30)
    assert res.metrics["syntax_ok"] == 1.0 and res.spans == []
    # Correct draft inside, broken answer: the error span lies in the answer, after </think>.
    text = f"<think>\n{F}tsx\n{GOOD}{F}\n</think>\n{F}tsx\n{BROKEN}{F}\n"
    res = react.score(_request(text), time.monotonic() + 30)
    assert res.metrics["syntax_ok"] == 0.0 and res.spans
    assert all(s.start >= text.index("</think>") + len("</think>") for s in res.spans)
    # Without the rule the draft inside the reasoning is what gets checked.
    assert react.score(_request(text, think_tags=None), time.monotonic() + 30).metrics["syntax_ok"] == 1.0


def test_react_truncated_reasoning_is_no_attempt(react):
    # Cut off before an answer: the reward contract's no attempt (missing_score, default -1).
    text = f"<think>\nhere is the code:\n{F}tsx\n{GOOD}{F}\nbut let me double-check"
    res = react.score(_request(text), time.monotonic() + 30)
    assert (res.score, res.spans, res.info["code"]) == (-1.0, [], "reasoning_truncated")
    res = react.score(_request(f"{F}tsx\n{GOOD}{F}\n", think_open=True), time.monotonic() + 30)
    assert res.score == -1.0  # the prompt opened the reasoning and it never closed


def test_render_reads_code_after_the_reasoning_only(render_backend):
    b = render_backend
    cut = b.score(_request(f"<think>\n{F}tsx\n{GOOD}{F}\n", judge="none"), time.monotonic() + 30)
    assert cut.metrics["rendered"] == 0.0 and "reasoning" in cut.info["render_error"] and cut.score == -1.0
    done = b.score(_request(f"<think>\n{F}tsx\n{BROKEN}{F}\n</think>\n{F}tsx\n{GOOD}{F}\n", judge="none"),
                   time.monotonic() + 30)
    assert done.metrics["rendered"] == 1.0
