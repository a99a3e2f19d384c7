"""`arith_synth`: multi-step arithmetic word problems solved one equality per paragraph.

A solution is 3-5 paragraphs separated by blank lines, each one equality such as `7 * 4 = 28`,
then `\\boxed{N}`. Scored by the `math` service with step checks. The supervised corpus carries
realistic slips (a forgotten carry or borrow, an off-by-one-row product) that propagate to the
answer, so a warm-started model is wrong in the same places people are.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from botgrpo_tasks.base import NEXT_TURN, TURN_END, Example, SyntheticTask, between_turns
from botgrpo_tasks.held_out import is_held_out

NAMES = ("Mia", "Tom", "Zoë", "José", "Ana", "Jürgen", "Lena", "Omar", "Renée", "Kai")
ITEMS = ("apples", "pens", "stickers", "coins", "marbles", "cards", "shells", "books")

# Probability of a slip when the step invites one (carry, borrow) or at all (products). A carry or
# borrow is dropped nearly always, so the warm-started model's most likely step there is wrong, and
# a product is off by one row half the time; with the warm start below, the base pass@1 lands in
# 10-30% (bootstrap.json): low enough to learn from, high enough that most groups carry a signal.
SLIP_RATES = {"carry": 0.9, "borrow": 0.9, "product": 0.5}


@dataclass(frozen=True)
class Step:
    a: int
    op: str  # one of + - *
    b: int

    def value(self) -> int:
        return {"+": self.a + self.b, "-": self.a - self.b, "*": self.a * self.b}[self.op]


@dataclass(frozen=True)
class Problem:
    text: str
    ops: tuple[tuple[str, int], ...]  # the first is ("*", b) applied to the first count a
    start: int

    def steps(self, slips: frozenset[int] = frozenset()) -> list[tuple[Step, int]]:
        """Each step with the result written for it; a slipped step's error propagates."""
        out, x = [], self.start
        for i, (op, b) in enumerate(self.ops):
            step = Step(x, op, b)
            x = _slipped(step) if i in slips else step.value()
            out.append((step, x))
        return out

    def answer(self) -> int:
        return self.steps()[-1][1]


def _slipped(step: Step) -> int:
    """The typical wrong result of a step: carry or borrow forgotten, or one row off in a product."""
    if step.op == "+":
        return step.value() - 10
    if step.op == "-":
        return step.value() + 10
    return step.value() + step.a


def _slip_kind(step: Step) -> str | None:
    if step.op == "+" and step.a % 10 + step.b % 10 >= 10:
        return "carry"
    if step.op == "-" and step.a % 10 < step.b % 10:
        return "borrow"
    if step.op == "*":
        return "product"
    return None


def solution(problem: Problem, slips: frozenset[int] = frozenset()) -> str:
    paras = [f"{s.a} {s.op} {s.b} = {r}" for s, r in problem.steps(slips)]
    return "\n\n".join(paras + [f"\\boxed{{{problem.steps(slips)[-1][1]}}}"])


# The calculator variant (task option calculator=true): every corpus solution first asks the built-in
# calculator tool for the product, as a model turn of its own, and then writes the steps with the
# product it returned (so the tool call cures the product slip), as one transcript (base.TURN_END).
# Always, so that a trajectory is a call and an answer (two model turns); groups still differ in
# the carries and borrows after the product.


def calculator_call(expression: str) -> str:
    return f'<tool_call>\n{{"name": "calculator", "arguments": {{"expression": "{expression}"}}}}\n</tool_call>'


def tool_answer(result: str) -> str:
    return between_turns(f"<tool_response>\n{result}\n</tool_response>")


def with_calculator(problem: Problem, slips: frozenset[int]) -> str:
    """A solution whose first turn asks the calculator for the product, and which then uses it."""
    product = problem.steps()[0][0]
    return (calculator_call(f"{product.a} * {product.b}") + TURN_END + tool_answer(str(product.value()))
            + NEXT_TURN + solution(problem, slips - {0}))


def sample_problem(rng: random.Random) -> Problem:
    """A product, then alternating gains and losses. The fixed order and small numbers (totals stay
    under 40) keep the problems within reach of a tiny model; the slips make them hard."""
    name, item = rng.choice(NAMES), rng.choice(ITEMS)
    a, b = rng.randint(2, 4), rng.randint(2, 5)
    sentences = [f"{name} has {a} bags with {b} {item} each."]
    ops: list[tuple[str, int]] = [("*", b)]
    x = a * b
    for i in range(rng.randint(2, 4)):
        if i % 2 == 0:
            k = rng.randint(2, 6)
            ops.append(("+", k))
            sentences.append(f"They find {k} more {item}.")
        else:
            k = rng.randint(2, min(6, x - 1))
            ops.append(("-", k))
            sentences.append(f"They give away {k} {item}.")
        x = Step(x, *ops[-1]).value()
    sentences.append(f"How many {item} does {name} have now?")
    return Problem(" ".join(sentences), tuple(ops), a)


def draw_slips(rng: random.Random, problem: Problem, scale: float = 1.0) -> frozenset[int]:
    """Which steps slip, judged on the operands actually written (after earlier slips). A slip that
    would take a later count below zero is not made (nobody gives away more than they have)."""
    slips, x = set(), problem.start
    for i, (op, b) in enumerate(problem.ops):
        step = Step(x, op, b)
        kind = _slip_kind(step)
        if kind and rng.random() < min(1.0, SLIP_RATES[kind] * scale) and _stays_whole(problem, i, _slipped(step)):
            slips.add(i)
            x = _slipped(step)
        else:
            x = step.value()
    return frozenset(slips)


def _stays_whole(problem: Problem, i: int, x: int) -> bool:
    """Whether the count stays >= 0 from step i on when step i writes x and the rest are right."""
    for op, b in problem.ops[i + 1 :]:
        if x < 0:
            return False
        x = Step(x, op, b).value()
    return x >= 0


def _is_eval(problem: Problem) -> bool:
    return is_held_out(problem.text)


def draw_problems(seed: int, n: int, split: str) -> list[Problem]:
    rng = random.Random(f"arith_synth/{split}/{seed}")
    seen: set[str] = set()
    out: list[Problem] = []
    for _ in range(n * 100):
        p = sample_problem(rng)
        if _is_eval(p) == (split == "eval") and p.text not in seen:
            seen.add(p.text)
            out.append(p)
            if len(out) == n:
                return out
    raise ValueError(f"arith_synth: could not draw {n} distinct {split} problems")


@dataclass(frozen=True)
class CorpusItem:
    problem: Problem
    slips: frozenset[int]
    prompt: str
    completion: str


class ArithSynthTask(SyntheticTask):
    """Options: n_train (default 2000), n_eval (256), slip_scale (multiplies SLIP_RATES, 1.0),
    calculator (false; true: the warm start learns to call the calculator tool, for run.tools=[calculator])."""

    name = "arith_synth"
    service = "math"
    service_options: dict[str, Any] = {"steps": True}
    success_metric = "correct"
    step_separator = "\n\n"
    stop = ()  # completions end with the model's EOS
    max_new_tokens = 96
    # faithful: right answer with every step true and grounded (the math service's metrics, README there)
    eval_metrics = ("correct", "faithful", "steps_wrong", "steps_ungrounded", "repeats")
    # 800 steps instead of the tiny recipe's 500: at 500 the model computes too few steps right
    # (base pass@1 0.05, measured), at 1500 it exceeds 0.5 and leaves little to learn.
    bootstrap_sft = {"tiny": {"steps": 800}}

    @property
    def corpus_version(self) -> int:
        """2: slips never make a count negative; 3: the rates above; 4 (calculator only): every
        solution calls the calculator (it was three in four)."""
        return 4 if self.options.get("calculator", False) else 3

    @property
    def warm_start_tools(self) -> tuple[str, ...]:
        return ("calculator",) if self.options.get("calculator", False) else ()

    def _examples(self, split: str, n: int) -> list[Example]:
        return [
            Example(id=f"arith_synth/{split}/{i}", prompt=prompt(p), reference={"answer": str(p.answer())})
            for i, p in enumerate(draw_problems(self.seed, n, split))
        ]

    def corpus_items(self, n: int, seed: int = 0) -> list[CorpusItem]:
        scale = float(self.options.get("slip_scale", 1.0))
        rng = random.Random(f"arith_synth/corpus/{seed}")
        items = []
        calls = bool(self.options.get("calculator", False))
        for p in draw_problems(seed, n, "train"):
            slips = draw_slips(rng, p, scale)
            items.append(CorpusItem(p, slips, prompt(p), with_calculator(p, slips) if calls else solution(p, slips)))
        return items

    def corpus(self, n: int, seed: int = 0) -> list[tuple[str, str]]:
        return [(it.prompt, it.completion) for it in self.corpus_items(n, seed)]


def prompt(problem: Problem) -> str:
    return problem.text + "\nSolve step by step, one equation per paragraph.\n"


def make_task(seed: int = 0, **options: Any) -> ArithSynthTask:
    return ArithSynthTask(seed=seed, **options)
