"""The default learning rate, by the model's origin and size: the one home of the rule that
`optim.lr: null` applies (trainer/defaults.py resolves it at start; `--list-options` prints RULE).

The bootstrapped tiny models train at 1e-3; a pretrained model at 1e-5 below 1e9 parameters and
1e-6 from there (the range GRPO recipes use: TRL and verl default to 1e-6 for 1.5B-7B models),
times 10 with LoRA (LoRA's best learning rate is about ten times full fine-tuning's). 1e-3 on
SmolLM2-135M collapsed it to blank completions in three steps; 1e-5 kept it healthy.
"""

from __future__ import annotations

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
