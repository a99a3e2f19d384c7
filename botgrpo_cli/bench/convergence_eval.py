"""Held-out evaluation of one model for the convergence benchmark.

Every evaluation samples the same prompts with the same seed, so two checkpoints (or two
algorithms) are compared on common random numbers. A record keeps, per prompt, how many of its
samples met the task's success metric (so any pass@k with k <= samples follows), and the mean of
every service metric over all samples.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

EVAL_SEED = 20261130  # one seed for every evaluation: comparable samples across checkpoints


@dataclass(frozen=True)
class EvalSpec:
    task: str
    prompts: int  # held-out prompts (the first ones of the task's eval split)
    samples: int  # samples per prompt
    task_options: dict = field(default_factory=dict)
    service_options: dict = field(default_factory=dict)  # merged over the task's
    temperature: float = 1.0  # as in training
    top_p: float = 1.0  # as in training
    max_new_tokens: int | None = None  # as in training; None = the task's
    chunk: int = 128  # rows generated at once


def evaluate_model(model_dir: Path | str, spec: EvalSpec, pool: Any, threads: int = 1) -> dict:
    """Sample `spec.samples` completions for each of `spec.prompts` held-out prompts and score them
    through the evaluation path (a LoRA checkpoint loads onto its base model, as in `botgrpo eval`).
    Failed scorings count as failures (they are reported in `failed`); metric means are over the
    scored samples, as in `botgrpo eval`."""
    from botgrpo_cli.evaluation import models
    from botgrpo_cli.evaluation.metrics import failed_scorings, metric_means
    from botgrpo_cli.evaluation.sampling import Scoring, held_out
    from botgrpo_cli.rollout import HFEngine, SamplingParams
    from botgrpo_tasks import get_task

    t0 = time.perf_counter()
    saved_threads = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        task = get_task(spec.task, seed=0, **spec.task_options)
        if len(task.eval_examples()) < spec.prompts:
            raise ValueError(f"task {spec.task} has only {len(task.eval_examples())} eval prompts; "
                             f"asked for {spec.prompts}")
        model, tok = models.load(models.Target("model", str(model_dir)))
        params = SamplingParams(max_new_tokens=spec.max_new_tokens or task.max_new_tokens, seed=EVAL_SEED,
                                temperature=spec.temperature, top_p=spec.top_p, stop=tuple(task.stop))
        scoring = Scoring.of_task(task, pool, options=spec.service_options)
        problems = held_out(HFEngine(model, tok), tok, task, scoring, params, spec.prompts, spec.samples,
                            batch_size=max(1, spec.chunk // spec.samples))
        names = sorted({k for p in problems for s in p.samples for k in s.metrics})
    finally:
        torch.set_num_threads(saved_threads)
    return {"samples": spec.samples, "prompts": len(problems), "counts": [p.correct for p in problems],
            "means": metric_means(problems, names), "success_metric": task.success_metric,
            "failed": failed_scorings(problems), "seconds": round(time.perf_counter() - t0, 2)}
