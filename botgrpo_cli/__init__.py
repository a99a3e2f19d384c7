"""botgrpo: reinforcement learning for language models with token-level rewards."""

import os as _os

__version__ = "0.1.0"

# OpenMP (torch's CPU threads) keeps a thread that ran out of work spinning before it sleeps:
# libgomp's default is 300,000 spins, milliseconds on this CPU. When the cores are shared (reward
# services scoring while we generate, other jobs), the spinners hold the cores the working threads
# need, and generation slows many times over. Sleeping at once (PASSIVE) fixes that but pays a
# wake-up per op, slower on a quiet machine. 1,000 spins (~tens of microseconds) bridges the gap
# between one op and the next and gives up soon after; the figures are in docs/training.md,
# "Rollouts and precision on CPU". libgomp reads this when torch loads it, hence here,
# before any torch import; a policy or spin count the user set wins.
if "OMP_WAIT_POLICY" not in _os.environ and "GOMP_SPINCOUNT" not in _os.environ:
    _os.environ["GOMP_SPINCOUNT"] = "1000"

# The Python API (docs/python-api.md), imported on first use: `import botgrpo_cli` stays light for the CLI.
_API = {"Trainer": "botgrpo_cli.trainer.api", **{name: "botgrpo_cli.config" for name in (
    "Config", "ModelConfig", "RolloutConfig", "RewardConfig", "AlgoConfig", "OptimConfig", "RunConfig", "LogConfig")}}
__all__ = sorted(_API)


def __getattr__(name: str):
    if name in _API:
        import importlib

        return getattr(importlib.import_module(_API[name]), name)
    raise AttributeError(f"module 'botgrpo_cli' has no attribute {name!r}")
