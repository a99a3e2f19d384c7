"""The trainer's held-out success rate: the evaluation path (evaluation/sampling.py) with the
training engine, pool and sampling settings, one completion per prompt."""

from __future__ import annotations

import dataclasses
from typing import Any

from botgrpo_cli.evaluation.metrics import failed_scorings, success_rate
from botgrpo_cli.evaluation.sampling import Scoring, held_out
from botgrpo_cli.rollout import Engine, SamplingParams


def held_out_success(engine: Engine, tok: Any, task: Any, scoring: Scoring, params: SamplingParams,
                     n_prompts: int, seed: int, batch_size: int) -> dict[str, float]:
    """eval/success over the first n held-out prompts; failed scorings count as failures."""
    problems = held_out(engine, tok, task, scoring, dataclasses.replace(params, seed=seed), n_prompts,
                        batch_size=batch_size)
    return {"eval/success": success_rate(problems), "eval/failed_scoring": float(failed_scorings(problems)),
            "eval/prompts": float(len(problems))}
