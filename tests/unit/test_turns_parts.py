"""Multi-turn parts without a model: tool calls read from turns, appended messages rendered through a
chat template, environment answers and rewards checked."""

from __future__ import annotations

import time

import pytest

from botgrpo_cli.turns.environment import EnvironmentFailed, as_messages, as_response, call_with_deadline
from botgrpo_cli.turns.render import appended_text, first_prompt
from botgrpo_cli.turns.tool_calls import parse_tool_calls
from rollout_models import tokenizer

CHATML = ("{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
          "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


def test_hermes_calls_each_block_and_bad_ones_are_calls_with_errors():
    text = ('Let me compute.\n<tool_call>\n{"name": "add", "arguments": {"a": 1, "b": 2}}\n</tool_call>\n'
            '<tool_call>{"name": "mul", "arguments": "{\\"x\\": 3}"}</tool_call><tool_call>{oops</tool_call>'
            '<tool_call>{"arguments": {}}</tool_call><tool_call>{"name": "f", "arguments": [1]}</tool_call>')
    calls = parse_tool_calls(text)
    assert [(c.name, c.arguments, c.error is None) for c in calls[:2]] == [("add", {"a": 1, "b": 2}, True),
                                                                          ("mul", {"x": 3}, True)]
    assert "not valid JSON" in calls[2].error and "names no tool" in calls[3].error
    assert "must be a JSON object" in calls[4].error and calls[4].name == "f"


def test_llama_json_turn_is_a_call_and_plain_answers_are_not():
    assert parse_tool_calls('<|python_tag|>{"name": "calc", "parameters": {"e": "1+1"}}')[0].arguments == {"e": "1+1"}
    assert parse_tool_calls("The answer is 4.") == []
    assert parse_tool_calls('{"name": "Bob", "age": 3}') == []  # JSON that is not a call: an answer
    unclosed = parse_tool_calls('<tool_call>{"name": "add", "arguments": {}}')  # cut by the length limit
    assert unclosed[0].name == "add" and unclosed[0].error is None


@pytest.fixture(scope="module")
def chat_tok():
    tok = tokenizer()
    tok.add_special_tokens({"additional_special_tokens": ["<|im_start|>", "<|im_end|>"]})
    tok.chat_template = CHATML
    return tok


def test_appended_text_is_the_template_between_two_model_turns(chat_tok):
    tool = [{"role": "tool", "content": "4"}]
    tail = appended_text(chat_tok, tool, None, None, ended_by="<|im_end|>")
    assert tail == "\n<|im_start|>tool\n4<|im_end|>\n<|im_start|>assistant\n"  # the model wrote <|im_end|>
    cut = appended_text(chat_tok, tool, None, None, ended_by=None)  # a turn cut short: the template closes it
    assert cut == "<|im_end|>" + tail
    whole = chat_tok.apply_chat_template([{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"},
                                          *tool], tokenize=False, add_generation_prompt=True)
    assert whole == first_prompt(chat_tok, [{"role": "user", "content": "q"}], None, None) + "a" + cut


def test_a_template_that_ignores_tools_is_noticed(chat_tok):
    from botgrpo_cli.turns.render import shows_tools

    schema = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}}]
    assert not shows_tools(chat_tok, schema)  # CHATML never reads `tools`
    showing = tokenizer()
    showing.chat_template = "{% if tools %}TOOLS {{ tools | tojson }}\n{% endif %}" + CHATML
    assert shows_tools(showing, schema)


def test_without_a_template_messages_are_plain_paragraphs():
    tok = tokenizer()
    assert appended_text(tok, [{"role": "tool", "content": "12"}, {"role": "user", "content": "More?"}], None,
                         None, None) == "\n\n<tool_response>\n12\n</tool_response>\n\nMore?"  # the model writes the blank line


def test_warm_start_transcripts_are_what_the_driver_builds():
    """The warm start's tool turns are exactly what the driver appends for a template-less tokenizer."""
    from botgrpo_cli.bootstrap.tokenizer import EOS
    from botgrpo_tasks.arith_synth import tool_answer
    from botgrpo_tasks.base import TURN_END, between_turns

    assert tool_answer("16") == appended_text(tokenizer(), [{"role": "tool", "content": "16"}], None, None, None)
    assert between_turns("Again?") == appended_text(tokenizer(), [{"role": "user", "content": "Again?"}], None,
                                                    None, None)
    assert TURN_END == EOS


def test_environment_answers_become_messages_or_done():
    assert as_messages("again?", "step") == [{"role": "user", "content": "again?"}]
    assert as_messages(None, "step") is None
    assert as_messages({"role": "user", "content": 3}, "step") == [{"role": "user", "content": "3"}]
    with pytest.raises(EnvironmentFailed, match="step returned int"):
        as_messages(7, "step")


def test_environment_rewards_become_responses_and_bad_ones_failures():
    ok = as_response((0.5, [(2, 5, -1.0)]), "r", 10)
    assert ok.usable and ok.score == 0.5 and [(s.start, s.end, s.reward) for s in ok.spans] == [(2, 5, -1.0)]
    assert as_response({"score": 1, "metrics": {"turns": 2}}, "r", 10).metrics == {"turns": 2.0}
    assert as_response(None, "r", 10) is None
    assert not as_response((1.0, [(4, 11, 0.5)]), "r", 10).usable  # past the transcript's end
    assert not as_response("high", "r", 10).usable


def test_environment_calls_that_raise_or_hang_fail_with_a_reason():
    def slow() -> None:
        time.sleep(5)

    with pytest.raises(EnvironmentFailed, match="did not return within 0.2 s"):
        call_with_deadline(slow, 0.2)
    with pytest.raises(EnvironmentFailed, match="raised ZeroDivisionError"):
        call_with_deadline(lambda: 1 / 0, 1.0)
    assert call_with_deadline(lambda x: x + 1, 1.0, 1) == 2


def test_samples_page_tints_only_the_model_tokens():
    from botgrpo_cli.trainer.samples import render_completion

    html = render_completion("ab<r>c", [(0, 1), (1, 2), (2, 5), (5, 6)], [1.0, -1.0, 9.0, 0.5],
                             [True, True, False, True])
    assert html.count('class="t"') == 3 and '<span class="m"' in html and "&lt;r&gt;" in html
    assert "+9.0000" not in html  # the untrained token's value neither shows nor sets the row's scale


def test_repair_feedback_keeps_each_attempts_spans_and_the_first_attempts_success():
    from botgrpo_cli.turns.environment import Transcript
    from botgrpo_cli.turns.feedback import ServiceFeedback
    from botgrpo_rewards.protocol import ScoreResponse, Span

    def score(text: str, row: dict) -> ScoreResponse:  # a checker that passes only the word "fixed"
        ok = text == "fixed"
        return ScoreResponse(id=text, status="ok", score=1.0 if ok else -1.0, metrics={"all_ok": float(ok)},
                             spans=[Span(0, len(text), 0.5 if ok else -0.5)], info={"message": "bad"})

    env = ServiceFeedback(score, "all_ok")
    env.reset({"prompt": "p"})
    text = "broken\n\nThe checker rejected it: bad.\n\nfixed"
    first = Transcript(row={}, messages=[], text=text, turns=[(0, 6)])
    assert "The checker rejected it: bad." in env.step(first)
    both = Transcript(row={}, messages=[], text=text, turns=[(0, 6), (len(text) - 5, len(text))])
    assert env.step(both) is None  # passed: done
    reward = env.reward(both)
    assert reward["score"] == 1.0 and reward["metrics"]["all_ok"] == 1.0
    assert reward["metrics"]["attempts"] == 2.0 and reward["metrics"]["first_attempt_all_ok"] == 0.0
    assert reward["spans"] == [(0, 6, -0.5), (len(text) - 5, len(text), 0.5)]  # each at its attempt's place


def test_environment_spans_pass_the_protocols_one_validator():
    """Float offsets are refused with the protocol's message, as on the reward-function path (issue 50)."""
    for spans in ([(0.6, 2.7, 0.5)], [(0, 2.0, 0.5)]):
        bad = as_response((0.5, spans), "r", 10)
        assert not bad.usable and "span offsets must be integers" in bad.error.message
    assert "overlaps" in as_response((0.5, [(0, 4, 0.5), (2, 6, 0.5)]), "r", 10).error.message
    assert "outside [-1.0, 1.0]" in as_response((0.5, [(0, 4, 3.0)]), "r", 10).error.message


def test_environment_rewards_that_are_not_finite_are_failures():
    for value in (float("nan"), (float("inf"), []), {"score": 0.5, "metrics": {"m": float("nan")}},
                  (0.5, [(0, 4, float("nan"))])):
        bad = as_response(value, "r", 10)
        assert not bad.usable and "finite" in bad.error.message, value


def test_the_message_and_tool_memory_bounds_reach_the_turns_from_the_config():
    from botgrpo_cli.config import load_config
    from botgrpo_cli.rollout.turns import settings_from
    from botgrpo_tasks import get_task

    cfg = load_config(None, sets=["run.tools=[calculator]", "rollout.max_message_chars=123",
                                  "rollout.tool_memory_mb=77"])
    settings = settings_from(cfg.rollout, cfg.run, get_task("arith_synth"))
    assert settings.max_message_chars == settings.tools.max_chars == 123 and settings.tools.memory_mb == 77
