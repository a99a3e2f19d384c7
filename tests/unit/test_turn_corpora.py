"""The multi-turn warm-start corpora: the calculator variant of arith_synth and the repair variant of
react_synth write transcripts the driver would build, and leave the plain corpora as they were."""

from __future__ import annotations

import json

from botgrpo_tasks import get_task
from botgrpo_tasks.base import TURN_END
from botgrpo_tasks.react_synth import REPAIR_REQUEST
from botgrpo_tasks.react_synth_grammar import render, requirements


def test_calculator_solutions_ask_for_the_product_and_use_the_answer():
    plain = get_task("arith_synth").corpus_items(200)
    called = get_task("arith_synth", calculator=True).corpus_items(200)
    assert [(it.problem, it.slips) for it in plain] == [(it.problem, it.slips) for it in called]  # the same draws
    assert all(it.completion.startswith("<tool_call>") for it in called)  # every one: a call, then the answer
    for it in called:
        call, rest = it.completion.split(TURN_END)
        args = json.loads(call[len("<tool_call>\n"):-len("\n</tool_call>")])["arguments"]
        a, b = (int(x) for x in args["expression"].split("*"))
        assert rest.startswith(f"\n\n<tool_response>\n{a * b}\n</tool_response>\n\n{a} * {b} = {a * b}\n\n")


def test_repairs_follow_faulty_programs_with_the_clean_one():
    revised = get_task("react_synth", revise=True).corpus_items(200)
    assert all(it.completion == render(it.spec) for it in revised if not it.faults)  # clean: one turn
    repairs = [it for it in revised if TURN_END in it.completion]
    assert 0.6 < len(repairs) / sum(bool(it.faults) for it in revised) < 0.95
    for it in repairs:
        first, second = it.completion.split(TURN_END)
        assert first == render(it.spec, it.faults)  # the faulty first attempt
        request, clean = second.split(REPAIR_REQUEST)
        assert request.startswith("\n\nThe checker rejected it: ") and clean.startswith("\n\n")
        assert clean[2:] == render(it.spec)  # the whole program, no fault left


def test_repairs_quote_the_given_rejections_for_the_faulty_programs():
    """The bootstrap passes a Reject that asks the react service; here one that records what it got."""
    seen = []

    def reject(items):
        seen.extend(items)
        return [f"The checker rejected it: line {i}: msg. {REPAIR_REQUEST}" for i in range(len(items))]

    task = get_task("react_synth", revise=True)
    plain, quoted = task.corpus_items(200), task.corpus_items(200, reject=reject)
    repairs = [it for it in quoted if TURN_END in it.completion]
    assert [it.spec for it in quoted] == [it.spec for it in plain]  # same draws, other words
    assert len(seen) == len(repairs) > 0
    for i, ((row, faulty), it) in enumerate(zip(seen, repairs)):
        assert faulty == render(it.spec, it.faults) and row["requirements"] == requirements(it.spec)
        assert f"line {i}: msg. {REPAIR_REQUEST}" in it.completion
    assert task.corpus_version == 2 and get_task("react_synth").corpus_version == 1  # only revise is rebuilt

