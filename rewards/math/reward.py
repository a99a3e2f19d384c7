"""The math service's score and spans for a judged completion (the reward contract, pure functions).

Outcomes, best first (rewards/math/README.md): correct answer > wrong answer (right steps rank above
wrong ones through spans) > no answer. A missing answer costs through the score (`missing_score`),
which reaches every token, EOS included: an empty text has no character to carry a span.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction

from botgrpo_rewards.math.grounding import answer_value, ground
from botgrpo_rewards.math.options import MathOptions
from botgrpo_rewards.math.steps import Equation, repeated_paragraphs
from botgrpo_rewards.protocol import Span

# An equality computes something when a side holds an operator or a LaTeX command ("2 = 2" does not).
_COMPUTES = re.compile(r"[-+*/^×÷·−!%]|\\[A-Za-z]+")


@dataclass(frozen=True)
class StepReport:
    """What the step checks found: step spans, which steps hold a false / only true equalities."""

    n_steps: int = 0
    wrong: tuple[int, ...] = ()  # indexes of steps with a false equality
    verified: tuple[tuple[int, int], ...] = ()  # (start, end) of the steps that earn step credit
    first_wrong: tuple[int, int, str] | None = None  # (start, end, "left = right") of the first wrong step
    grounded: int = 0  # steps whose true equalities all compute with the problem's numbers or earlier results
    ungrounded: int = 0  # steps without a false equality holding a true one that does not (earns nothing)
    known: frozenset[Fraction] | None = frozenset()  # the problem's numbers and grounded results (None: not grounded)
    first_ungrounded: tuple[int, int] | None = None  # (start, end) of the first ungrounded step
    repeats: tuple[tuple[int, int], ...] = ()  # paragraphs repeating an earlier one (after the thinking block)


def _computes(eq: Equation) -> bool:
    return " ".join(eq.left.split()) != " ".join(eq.right.split()) and bool(_COMPUTES.search(eq.left + eq.right))


def ungrounded_steps(found: list[Equation], verdicts: list[bool | None], grounded: tuple[bool, ...],
                     wrong: set[int]) -> set[int]:
    """Steps without a false equality that hold a true, computing equality with ungrounded operands."""
    return {eq.step for eq, v, g in zip(found, verdicts, grounded)
            if v is True and not g and eq.step not in wrong and _computes(eq)}


def credited_steps(found: list[Equation], verdicts: list[bool | None], wrong: set[int],
                   ungrounded: set[int] = frozenset()) -> list[int]:
    """Steps that earn +step_credit: no false equality, no ungrounded true one (grounding.py), and a
    true one that computes something and that no earlier step was credited for. Measured on
    arith_synth: without the last two rules a policy farms credit by writing "2 = 2" or repeating one
    true line (research/convergence.md); without grounding, by writing true arithmetic of other numbers."""
    seen: set[tuple[str, str]] = set()
    out: list[int] = []
    for eq, verdict in zip(found, verdicts):
        key = (" ".join(eq.left.split()), " ".join(eq.right.split()))
        if verdict is not True or eq.step in wrong or eq.step in ungrounded or key in seen or not _computes(eq):
            continue
        seen.add(key)
        out.append(eq.step)
    return sorted(set(out))


def step_report(spans: list[tuple[int, int]], found: list[Equation], verdicts: list[bool | None],
                problem: set[Fraction] | None, repeats: list[tuple[int, int]] = ()) -> StepReport:
    """The step spans, wrong / grounded / credited steps from the equalities' verdicts (doubt is
    neither right nor wrong) and the problem's numbers (None: grounding is off, all count)."""
    wrong = sorted({e.step for e, v in zip(found, verdicts) if v is False})
    grounding = ground(found, verdicts, problem or set())
    flags = grounding.grounded if problem is not None else (True,) * len(found)
    ungrounded = ungrounded_steps(found, verdicts, flags, set(wrong))
    true_steps = {e.step for e, v in zip(found, verdicts) if v is True and _computes(e)}
    credited = credited_steps(found, verdicts, set(wrong), ungrounded)
    first = None
    if wrong:
        eq = next(e for e, v in zip(found, verdicts) if v is False and e.step == wrong[0])
        first = (*spans[wrong[0]], f"{eq.left} = {eq.right}")
    return StepReport(len(spans), tuple(wrong), tuple(spans[k] for k in credited), first,
                      len(true_steps - set(wrong) - ungrounded), len(ungrounded),
                      grounding.known if problem is not None else None,
                      spans[min(ungrounded)] if ungrounded else None, tuple(repeats))


def faithful(correct: bool, answer: str | None, steps: StepReport) -> bool:
    """Right for the right reasons: the answer is correct, no step is false or ungrounded, and a
    numeric answer is one of the known numbers (a grounded result; a bare correct guess is not).
    With grounding off, only the first two."""
    if not correct or steps.wrong or steps.ungrounded:
        return False
    value = answer_value(answer or "")
    return value is None or steps.known is None or value in steps.known


def metrics(text: str, correct: bool, answer: str | None, steps: StepReport, checked: bool) -> dict[str, float]:
    """The service's metrics (README); the grounding ones only when steps were `checked`."""
    out = {"correct": float(correct), "extracted": float(answer is not None), "steps": float(steps.n_steps),
           "steps_wrong": float(len(steps.wrong)), "repeats": float(len(repeated_paragraphs(text)))}
    if checked:
        out.update(steps_grounded=float(steps.grounded), steps_ungrounded=float(steps.ungrounded),
                   faithful=float(faithful(correct, answer, steps)))
    return out


def score(correct: bool, answered: bool, opts: MathOptions) -> float:
    return 1.0 if correct else (0.0 if answered else opts.missing_score)


def spans(text: str, answer: tuple[int, int] | None, correct: bool, steps: StepReport, opts: MathOptions,
          region: int = 0) -> list[Span]:
    """Answer span (+credit / -penalty), or -penalty over the last line without an answer; -penalty
    over the first wrong step (in a wrong answer without one, over the first ungrounded step); +credit over each verified step when there is an answer (credit for
    steps that never reach an answer would pay a policy to skip it). Never overlapping, and never
    before `region` (where the answer may start: nothing inside the thinking block is graded)."""
    out: list[Span] = []
    taken: list[tuple[int, int]] = []
    if answer is not None:
        reward = opts.answer_credit if correct else -opts.answer_penalty
        _add(out, taken, answer[0], answer[1], reward, "answer")
    if steps.first_wrong is not None:
        _add(out, taken, steps.first_wrong[0], steps.first_wrong[1], -opts.step_penalty, "step")
    elif answer is not None and not correct and steps.first_ungrounded is not None:
        # every step true, the answer wrong: the error is where the solution left the problem
        _add(out, taken, *steps.first_ungrounded, -opts.step_penalty, "step_ungrounded")
    if answer is None and opts.penalize_missing:
        last = _last_line(text, region)
        if last is not None and not any(s < last[1] and last[0] < e for s, e in taken):
            _add(out, taken, last[0], last[1], -opts.answer_penalty, "no_answer")
    for start, end in steps.repeats:  # measured: step spans made looping pay (research/measurements.md)
        _add(out, taken, start, end, -opts.repeat_penalty, "repeat")
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


def _last_line(text: str, region: int = 0) -> tuple[int, int] | None:
    """Code-point span of the last non-blank line at or after `region` (whitespace trimmed), where a
    final answer belongs; None when the region is blank (a completion cut off while thinking)."""
    end = len(text.rstrip())
    if end <= region or not text[region:end].strip():
        return None
    start = max(region, text.rfind("\n", 0, end) + 1)
    while start < end and text[start].isspace():
        start += 1
    return start, end
