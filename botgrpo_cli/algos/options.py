"""Typed, range-checked keyword options of estimators and losses, declared in their signatures.

An option is annotated `Annotated[type, rule]`: `OneOf(values)`, `Range(ge=, gt=, le=, lt=)` or
`FromTrainer()` (a tensor the trainer fills in, never a config value). `check_value` types one value
(YAML gives 1e-4 as a string) and returns it or raises OptionError naming the option and what it
may be; `Registry.check_options` runs it over a config's options before any model loads, and
`checked` over every call of a registered function, so the signature is the one home of the rules.
"""

from __future__ import annotations

import functools
import math
import typing
from dataclasses import dataclass
from typing import Any

from botgrpo_cli.errors import UserError, closest


class OptionError(UserError, ValueError):
    """An option value outside what its estimator or loss declares (a ValueError for library callers)."""


@dataclass(frozen=True)
class OneOf:
    values: tuple

    def allowed(self, base: type) -> str:
        return ", ".join(map(str, self.values))

    def problem(self, value: Any) -> str | None:
        if value in self.values:
            return None
        near = closest(str(value), [str(v) for v in self.values])
        return self.allowed(str) + (f" (did you mean {near[0]}?)" if near else "")


@dataclass(frozen=True)
class Range:
    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    lt: float | None = None

    def allowed(self, base: type) -> str:
        parts = [f"{op} {bound:g}" for op, bound in ((">=", self.ge), (">", self.gt), ("<=", self.le),
                                                     ("<", self.lt)) if bound is not None]
        return f"{_KINDS.get(base, base.__name__)} " + " and ".join(parts)

    def problem(self, value: float) -> str | None:
        ok = (math.isfinite(value) and (self.ge is None or value >= self.ge) and (self.gt is None or value > self.gt)
              and (self.le is None or value <= self.le) and (self.lt is None or value < self.lt))
        return None if ok else self.allowed(type(value))


@dataclass(frozen=True)
class FromTrainer:
    """A tensor option the trainer computes (step boundaries, process rewards): not settable in a config."""

    def allowed(self, base: type) -> str:
        return "no value: the trainer computes it from the batch"


def from_trainer(fn: Any) -> list[str]:
    """The keyword options `fn` declares as FromTrainer(): what it asks the trainer to compute."""
    return [name for name, (_, rule) in rules(fn).items() if isinstance(rule, FromTrainer)]


def trainer_inputs(name: str, fn: Any, options: dict, computes: dict[str, Any]) -> dict:
    """`options` plus each tensor `fn` (registered as `name`) declares FromTrainer(), computed by the
    caller's `computes[option]()` unless given: its annotations decide what it gets, never its name.
    OptionError when it asks for one this caller does not compute."""
    out = dict(options)
    for option in from_trainer(fn):
        if option not in computes:
            raise OptionError(f"advantage estimator {name!r} asks the trainer for {option!r}, which it does not compute; it computes: "
                              f"{', '.join(computes)}")
        if option not in out:
            out[option] = computes[option]()
    return out


_KINDS = {float: "a number", int: "an integer", str: "a string", bool: "true or false"}


def check_choice(option: str, value: Any, choices: tuple) -> None:
    """OptionError naming the valid choices when `value` is not one of them (for a choice that is an
    argument rather than a declared keyword option, e.g. a loss aggregation)."""
    problem = OneOf(tuple(choices)).problem(value)
    if problem is not None:
        raise OptionError(f"{option}={value!r} is not valid; allowed: {problem}")


@functools.lru_cache(maxsize=None)  # signatures do not change; compute_advantages asks every step
def rules(fn: Any) -> dict[str, tuple[type, Any]]:
    """{option: (base type, rule)} for every Annotated keyword option of `fn`."""
    out = {}
    for name, hint in typing.get_type_hints(fn, include_extras=True).items():
        if typing.get_origin(hint) is typing.Annotated:
            base, rule = typing.get_args(hint)[:2]
            out[name] = (base, rule)
    return out


def _typed(value: Any, base: type) -> Any:
    """value as `base` (int -> float, numeric strings -> float), or raise TypeError."""
    if base is float and isinstance(value, str):
        value = float(value)  # ValueError -> reported by the caller
    if base is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if not isinstance(value, base) or (base in (int, float) and isinstance(value, bool)):
        raise TypeError
    return value


def check_value(option: str, owner: str, value: Any, base: type, rule: Any, user: bool) -> Any:
    """The typed value, or OptionError "OPTION=VALUE is not valid for OWNER; allowed: ..." (one line).

    user: the value comes from a config (FromTrainer options are refused) rather than the trainer.
    """
    if isinstance(rule, FromTrainer):
        if user:
            raise OptionError(f"{option} is not an option to set for {owner} ({rule.allowed(base)}); remove it")
        return value
    try:
        typed = _typed(value, base)
    except (TypeError, ValueError):
        problem = rule.allowed(base)
    else:
        problem = rule.problem(typed)
        if problem is None:
            return typed
    raise OptionError(f"{option}={value!r} is not valid for {owner}; allowed: {problem}")


def checked(fn: Any, owner: str) -> Any:
    """`fn` with its declared keyword options typed and checked on every call, direct calls included
    (OptionError naming `owner`); the registries wrap what they register with it."""
    declared = rules(fn)

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        for key in kwargs.keys() & declared.keys():
            kwargs[key] = check_value(key, owner, kwargs[key], *declared[key], user=False)
        return fn(*args, **kwargs)

    return call
