"""The math service's request options, validated: a bad value is a `bad_request` naming the fix,
and reward numbers that would break the reward contract (rewards/contract.py) are refused."""

from __future__ import annotations

import math
from dataclasses import dataclass

from botgrpo_rewards.backend import BackendError, check_option_names
from botgrpo_rewards.contract import Outcome, bool_option, check_order, number_option
from botgrpo_rewards.math.extract import DEFAULT_THINK_TAGS
from botgrpo_rewards.protocol import ScoreRequest
from botgrpo_rewards.thinking import think_options

MAX_REL_TOL = 0.1
# Default credit per step whose closed-form equalities are verified true (chosen by measurement:
# research/convergence.md, arith_synth after the reward contract).
STEP_CREDIT = 0.25


@dataclass(frozen=True)
class MathOptions:
    steps: bool = False
    penalize_missing: bool = True
    rel_tol: float = 0.0  # 0: decimals compare exactly; a dataset with rounded golds sets e.g. 1e-3
    think_tags: tuple[str, str] | None = DEFAULT_THINK_TAGS  # None: no reasoning block expected
    think_open: bool = False  # the prompt opened the reasoning block (shared options: thinking.py)
    missing_score: float = -1.0  # score of a completion without an answer
    answer_credit: float = 1.0  # span reward on a right answer
    answer_penalty: float = 0.5  # minus this on a wrong answer (and on the last line without one)
    step_penalty: float = 0.5  # minus this on the first step holding a false equality
    step_credit: float = STEP_CREDIT  # plus this on each step whose equalities are verified true
    grounding: bool = True  # step credit only for operands from the prompt or earlier results (grounding.py)
    repeat_penalty: float = 0.5  # minus this on each paragraph that repeats an earlier one (with steps)

    def outcomes(self) -> list[Outcome]:
        """The reward contract's outcomes, best first, with the score and span rewards each can earn."""
        step_low = -max(self.step_penalty, self.repeat_penalty) if self.steps else 0.0
        step_high = self.step_credit if self.steps else 0.0
        missing_low = min(step_low, -self.answer_penalty if self.penalize_missing else 0.0)
        return [
            Outcome("correct answer", (1.0, 1.0), (step_low, max(self.answer_credit, step_high))),
            Outcome("wrong answer", (0.0, 0.0), (min(step_low, -self.answer_penalty), step_high)),
            Outcome("no answer", (self.missing_score, self.missing_score), (missing_low, 0.0)),
        ]


def _rel_tol(request: ScoreRequest) -> float:
    value = request.options.get("rel_tol", 0.0)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or not 0 <= value <= MAX_REL_TOL:
        raise BackendError(f"option 'rel_tol' must be a number from 0 to {MAX_REL_TOL} (0: exact)", "bad_request")
    return float(value)


def read_options(request: ScoreRequest) -> MathOptions:
    check_option_names("math", request.options, tuple(MathOptions.__dataclass_fields__))
    tags, opened = think_options(request.options)
    numbers = {name: number_option(request.options, name, getattr(MathOptions, name), 0.0, 1.0)
               for name in ("answer_credit", "answer_penalty", "step_penalty", "step_credit", "repeat_penalty")}
    opts = MathOptions(bool_option(request.options, "steps", False), bool_option(request.options, "penalize_missing", True),
                       _rel_tol(request), tags, opened,
                       number_option(request.options, "missing_score", MathOptions.missing_score, -1.0, 0.0), **numbers,
                       grounding=bool_option(request.options, "grounding", True))
    check_order("math", opts.outcomes())
    return opts
