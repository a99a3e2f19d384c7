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

from botgrpo_rewards.protocol import ScoreRequest

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
    """Sample `spec.samples` completions for each of `spec.prompts` held-out prompts and score them.
    Failed scorings count as failures (they are reported in `failed`)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from botgrpo_cli.rollout import HFEngine, SamplingParams
    from botgrpo_tasks import get_task

    t0 = time.perf_counter()
    saved_threads = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        task = get_task(spec.task, seed=0, **spec.task_options)
        examples = task.eval_examples()[: spec.prompts]
        if len(examples) < spec.prompts:
            raise ValueError(f"task {spec.task} has only {len(examples)} eval prompts; asked for {spec.prompts}")
        tok = AutoTokenizer.from_pretrained(str(model_dir))
        model = AutoModelForCausalLM.from_pretrained(str(model_dir)).eval()
        engine = HFEngine(model, tok)
        params = SamplingParams(max_new_tokens=spec.max_new_tokens or task.max_new_tokens, seed=EVAL_SEED,
                                temperature=spec.temperature, top_p=spec.top_p, stop=tuple(task.stop))
        options = {**task.service_options, **spec.service_options}
        per_chunk = max(1, spec.chunk // spec.samples)
        counts: list[int] = []
        sums: dict[str, float] = {}
        failed = 0
        for lo in range(0, len(examples), per_chunk):
            part = examples[lo: lo + per_chunk]
            batch = engine.generate([task.format_prompt(ex, tok) for ex in part], spec.samples, params)
            rows = [ex for ex in part for _ in range(spec.samples)]
            responses = pool.score([ScoreRequest(id=f"eval-{lo}-{i}", completion=text, prompt=ex.prompt,
                                                 reference=dict(ex.reference), options=options)
                                    for i, (text, ex) in enumerate(zip(batch.texts, rows))])
            ok = [r.ok and r.score is not None for r in responses]
            failed += ok.count(False)
            for r, good in zip(responses, ok):
                for name, value in (r.metrics if good else {}).items():
                    sums[name] = sums.get(name, 0.0) + float(value)
            hits = [good and float(r.metrics.get(task.success_metric, 0.0)) > 0.5 for r, good in zip(responses, ok)]
            counts.extend(sum(hits[j * spec.samples:(j + 1) * spec.samples]) for j in range(len(part)))
    finally:
        torch.set_num_threads(saved_threads)
    total = len(examples) * spec.samples
    return {"samples": spec.samples, "prompts": len(examples), "counts": counts,
            "means": {name: value / total for name, value in sorted(sums.items())},
            "success_metric": task.success_metric, "failed": failed,
            "seconds": round(time.perf_counter() - t0, 2)}
