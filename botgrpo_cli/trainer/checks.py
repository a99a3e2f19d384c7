"""CI smoke checks (`run.fail_on`, `botgrpo train --check`): a run that went through every step can
still show a broken pipeline. Each check, when on, ends the run with one line and a non-zero exit:

- nonfinite: a step's loss or gradient norm is NaN or infinite (checked at that step; the run stops
  there and saves nothing from it);
- masked: every completion of a step was masked, i.e. the reward service failed them all (at that step);
- flat: every group's scores were constant on every step, so the outcome gave no signal (at the end);
- frozen: no trainable parameter changed over the session (at the end, after the last checkpoint).

One check is always on: a run in which no completion of any step got a reward (every one masked:
the reward failed or returned None for all) learned nothing, and ends non-zero with one line
saying why the reward failed (NothingScored), whatever run.fail_on says.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import torch

from botgrpo_cli.errors import UserError

CHECKS = ("nonfinite", "masked", "flat", "frozen")


class CheckFailed(UserError):
    """A `run.fail_on` check that held: the run is broken though the process ran."""

    def __init__(self, name: str, detail: str):
        super().__init__(f"check {name} failed: {detail} (run.fail_on; see `botgrpo train --list-options`)")


def checked(fail_on: list) -> list[str]:
    """The configured checks, each a known name."""
    unknown = [c for c in fail_on if c not in CHECKS]
    if unknown:
        raise UserError(f"run.fail_on: unknown check {', '.join(map(repr, unknown))}; known: {', '.join(CHECKS)}")
    return list(dict.fromkeys(fail_on))


def fingerprint(model: Any) -> list[tuple[float, float]]:
    """(sum, sum of squares) of each trainable parameter, in float64: any real update changes it,
    and it costs no copy of the weights."""
    with torch.no_grad():
        return [(float(p.double().sum()), float(p.double().square().sum()))
                for p in model.parameters() if p.requires_grad]


FIX = "Fix the reward (try it on a few completions with `botgrpo reward score`) and train again"


class NothingScored(UserError):
    """No completion of any step was scored: the run learned nothing from its reward."""

    def __init__(self, steps: int, why: str | None):
        super().__init__(f"every completion of all {steps} step(s) was masked, so nothing was learned: "
                         f"{why or 'the reward failed every completion'}. {FIX}")


class RunChecks:
    def __init__(self, fail_on: list, model: Any, failure: Callable[[], str | None] = lambda: None,
                 bug: Callable[[], str | None] = lambda: None):
        """`failure()`: the reward's first failure (why it masked a completion), named by the lines.
        `bug()`: a reward function's answer that broke the calling contract (wrong count or type): the
        same on every batch, so the run stops after the step that met it, always."""
        self.on = checked(fail_on)
        self.failure, self.bug = failure, bug
        self.start = fingerprint(model) if "frozen" in self.on else None
        self.steps = 0
        self.all_flat = True
        self.scored_any = False

    def after_step(self, step: int, metrics: dict[str, float]) -> None:
        self.steps += 1
        bug = self.bug()
        if bug:
            raise UserError(f"step {step}: {bug}; a reward function returns one item per completion, in a list: "
                            f"fix it and train again")
        if "nonfinite" in self.on:
            bad = [k for k in ("loss", "grad_norm") if k in metrics and not math.isfinite(metrics[k])]
            if bad:
                raise CheckFailed("nonfinite", f"step {step} has {', '.join(f'{k} = {metrics[k]}' for k in bad)}")
        masked, mean = metrics.get("reward/masked", 0.0), metrics.get("reward/mean", 0.0)
        self.scored_any = self.scored_any or not math.isnan(mean)
        if "masked" in self.on and masked > 0 and math.isnan(mean):  # no completion was scored
            raise CheckFailed("masked", f"all {int(masked)} completions of step {step} were masked: "
                                        f"{self.failure() or 'the reward failed every one'}. {FIX}")
        self.all_flat = self.all_flat and metrics.get("groups/zero_variance_frac") == 1.0

    def at_end(self, model: Any) -> None:
        if not self.steps:
            return
        if not self.scored_any:
            raise NothingScored(self.steps, self.failure())
        if "flat" in self.on and self.all_flat:
            raise CheckFailed("flat", f"every group's scores were constant on all {self.steps} steps: the outcome "
                                      "gave no learning signal (check the task, the reward service, or raise "
                                      "rollout.group_size / rollout.temperature)")
        if "frozen" in self.on and fingerprint(model) == self.start:
            raise CheckFailed("frozen", f"no parameter changed in {self.steps} steps (zero advantages or "
                                        "gradients, or optim.lr = 0)")
