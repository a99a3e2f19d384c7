"""Worked solutions cut off before their final answer are not credited (rewards/math/sentence.py).

tests/fixtures/cutoff/worked_solutions.jsonl holds worked solutions of the problems in
tests/data/aime_sample.jsonl, written for this test in PRM800K's format: one step a line, then
`# Answer` and the answer. Their cut-offs: every prefix that ends at a step boundary before the
concluding step, every step cut in the middle (the concluding one too), and the whole solution
with its `# Answer` heading but no answer. A prefix that keeps the concluding step ("So the
remainder is 9.") states its answer and is read as one; that is no cut-off here.
"""

from __future__ import annotations

import json
from pathlib import Path

from botgrpo_rewards.math.check import check_answer
from botgrpo_rewards.math.extract import extract_answer

SOLUTIONS = Path(__file__).parents[1] / "fixtures" / "cutoff" / "worked_solutions.jsonl"
MAX_CREDITED = 2  # of 162 or more cut-offs


def _solutions() -> list[dict]:
    return [json.loads(line) for line in SOLUTIONS.read_text(encoding="utf-8").splitlines()]


def _cut_offs(steps: list[str]) -> list[str]:
    at_boundaries = ["\n".join(steps[:k]) for k in range(1, len(steps))]
    in_the_middle = ["\n".join(steps[:k] + [s[:s.rfind(" ", 0, len(s) // 2)]]) for k, s in enumerate(steps)]
    return at_boundaries + in_the_middle + ["\n".join(steps) + "\n\n# Answer\n\n"]


def _credited(text: str, gold: str) -> bool:
    found = extract_answer(text)
    return found.answer is not None and check_answer(found.answer, gold)[0]


def test_whole_worked_solutions_are_credited():
    solutions = _solutions()
    assert len(solutions) == 12
    for s in solutions:
        assert _credited("\n".join(s["steps"]) + "\n\n# Answer\n\n" + s["answer"], s["answer"]), s["id"]


def test_cut_off_worked_solutions_are_not_credited():
    cases = [(s["id"], text, s["answer"]) for s in _solutions() for text in _cut_offs(s["steps"])]
    assert len(cases) >= 162
    credited = [(sid, text.splitlines()[-1]) for sid, text, gold in cases if _credited(text, gold)]
    assert len(credited) <= MAX_CREDITED, credited
