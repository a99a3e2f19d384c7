"""The default learning rate, by the model's origin and size: the one home of the rule that
`optim.lr: null` applies (trainer/defaults.py resolves it at start; `--list-options` prints RULE).

The bootstrapped tiny models train at 1e-3; a pretrained model at 1e-5 below 1e9 parameters and
1e-6 from there (the range GRPO recipes use: TRL and verl default to 1e-6 for 1.5B-7B models),
times 10 with LoRA (LoRA's best learning rate is about ten times full fine-tuning's). 1e-3 on
SmolLM2-135M collapsed it to blank completions in three steps; 1e-5 kept it healthy.
"""

from __future__ import annotations

from typing import Any

TINY = 1e-3
PRETRAINED = 1e-5
LARGE = 1e-6
LARGE_FROM_PARAMS = 1e9
LORA_FACTOR = 10


def _sci(x: float) -> str:
    return f"{x:.0e}".replace("e-0", "e-").replace("e+0", "e")


RULE = (f"{_sci(TINY)} for a bootstrapped tiny model, {_sci(PRETRAINED)} for a pretrained one under "
        f"{_sci(LARGE_FROM_PARAMS)} parameters, {_sci(LARGE)} above; x{LORA_FACTOR} with LoRA")


def default_lr(n_params: int, bootstrapped: bool, lora: bool) -> float:
    """The learning rate RULE gives a model of `n_params` parameters."""
    if bootstrapped:
        return TINY
    base = PRETRAINED if n_params < LARGE_FROM_PARAMS else LARGE
    return base * LORA_FACTOR if lora else base


# optim.lr_scheduler: transformers' schedules by their names (TrainingArguments.lr_scheduler_type),
# less reduce_lr_on_plateau and greedy, which step on a metric, not on the step count.
SCHEDULES = ("constant_with_warmup", "linear", "cosine", "cosine_with_restarts", "polynomial", "constant",
             "inverse_sqrt", "cosine_with_min_lr", "cosine_warmup_with_min_lr", "warmup_stable_decay")


def scheduler(optimizer: Any, name: str, warmup_steps: int, total_steps: int, options: dict | None = None) -> Any:
    """transformers' `get_scheduler(name)` over `total_steps` scheduler steps, `warmup_steps` of them a
    linear warm-up from 0; `options` are the schedule's own keywords (num_cycles, power, lr_end,
    min_lr, ...: TrainingArguments.lr_scheduler_kwargs). A LambdaLR: its state_dict resumes it."""
    from transformers import get_scheduler

    if name not in SCHEDULES:
        raise ValueError(f"unknown learning-rate schedule {name!r}; known: {', '.join(SCHEDULES)}")
    try:
        return get_scheduler(name, optimizer, num_warmup_steps=warmup_steps, num_training_steps=max(1, total_steps),
                             scheduler_specific_kwargs=dict(options or {}))
    except TypeError as err:  # an argument this schedule does not take
        from botgrpo_cli.errors import UserError

        raise UserError(f"optim.lr_scheduler_options {options} do not fit the {name} schedule: {err}") from None
