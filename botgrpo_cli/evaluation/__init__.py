"""Evaluation: Pass@k, compile/render rates and judged win rates (`botgrpo eval`), and run
comparison (`botgrpo compare`). Reports are JSON, Markdown and PNG.

    from botgrpo_cli.evaluation import EvalOptions, run_eval, compare_runs

Names load lazily, so `botgrpo compare` does not pay for importing torch.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {"EvalOptions": "runner", "run_eval": "runner", "compare_runs": "compare"}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
