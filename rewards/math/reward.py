"""The math service's score and spans for a judged completion (the reward contract, pure functions).

Outcomes, best first (rewards/math/README.md): correct answer > wrong answer (right steps rank above
wrong ones through spans) > no answer. A missing answer costs through the score (`missing_score`),
which reaches every token, EOS included: an empty text has no character to carry a span.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from botgrpo_rewards.math.options import MathOptions
from botgrpo_rewards.math.steps import Equation
from botgrpo_rewards.protocol import Span

# An equality computes something when a side holds an operator or a LaTeX command ("2 = 2" does not).
_COMPUTES = re.compile(r"[-+*/^×÷·−!%]|\\[A-Za-z]+")


@dataclass(frozen=True)
class StepReport:
    """What the step checks found: step spans, which steps hold a false / only true equalities."""

    n_steps: int = 0
    wrong: tuple[int, ...] = ()  # indexes of steps with a false equality
    verified: tuple[tuple[int, int], ...] = ()  # (start, end) of steps with true equalities only
    first_wrong: tuple[int, int, str] | None = None  # (start, end, "left = right") of the first wrong step


def credited_steps(found: list[Equation], verdicts: list[bool | None], wrong: set[int]) -> list[int]:
    """Steps that earn +step_credit: no false equality, and a true one that computes something and
    that no earlier step was credited for. Measured on arith_synth: without these two rules a policy
    farms credit by writing "2 = 2" or repeating one true line (docs/convergence.md)."""
    seen: set[tuple[str, str]] = set()
    out: list[int] = []
    for eq, verdict in zip(found, verdicts):
        key = (" ".join(eq.left.split()), " ".join(eq.right.split()))
        if verdict is not True or eq.step in wrong or key in seen or key[0] == key[1] \
                or not _COMPUTES.search(eq.left + eq.right):
            continue
        seen.add(key)
        if not out or out[-1] != eq.step:
            out.append(eq.step)
    return sorted(set(out))


def score(correct: bool, answered: bool, opts: MathOptions) -> float:
    return 1.0 if correct else (0.0 if answered else opts.missing_score)


def spans(text: str, answer: tuple[int, int] | None, correct: bool, steps: StepReport, opts: MathOptions) -> list[Span]:
    """Answer span (+credit / -penalty), or -penalty over the last line without an answer; -penalty
    over the first wrong step; +credit over each verified step when there is an answer (credit for
    steps that never reach an answer would pay a policy to skip it). Never overlapping."""
    out: list[Span] = []
    taken: list[tuple[int, int]] = []
    if answer is not None:
        reward = opts.answer_credit if correct else -opts.answer_penalty
        _add(out, taken, answer[0], answer[1], reward, "answer")
    if steps.first_wrong is not None:
        _add(out, taken, steps.first_wrong[0], steps.first_wrong[1], -opts.step_penalty, "step")
    if answer is None and opts.penalize_missing:
        last = _last_line(text)
        if last is not None and not any(s < last[1] and last[0] < e for s, e in taken):
            _add(out, taken, last[0], last[1], -opts.answer_penalty, "no_answer")
    if answer is not None and opts.step_credit > 0:
        for start, end in steps.verified:
            _add(out, taken, start, end, opts.step_credit, "step_ok")
    return sorted(out, key=lambda s: s.start)


def _add(out: list[Span], taken: list[tuple[int, int]], start: int, end: int, reward: float, label: str) -> None:
    """Add the longest part of [start, end) that earlier spans left free (a step paragraph holding
    the answer keeps its text before the answer)."""
    pieces = [(start, end)]
    for s, e in taken:
        pieces = [p for a, b in pieces for p in ((a, min(b, s)), (max(a, e), b)) if p[0] < p[1]]
    if pieces and reward != 0:
        a, b = max(pieces, key=lambda p: p[1] - p[0])
        out.append(Span(a, b, reward, label))
        taken.append((a, b))


def _last_line(text: str) -> tuple[int, int] | None:
    """Code-point span of the last non-blank line (whitespace trimmed), where a final answer belongs."""
    end = len(text.rstrip())
    if end == 0:
        return None
    start = text.rfind("\n", 0, end) + 1
    while start < end and text[start].isspace():
        start += 1
    return start, end
