"""Success rate on held-out prompts, sampled as in training (one completion per prompt)."""

from __future__ import annotations

import dataclasses

from botgrpo_cli.trainer import scoring


def success_rate(s, n_prompts: int, seed: int) -> dict[str, float]:
    """Mean of the task's success metric over n held-out prompts; failed scorings count as failures."""
    examples = s.task.eval_examples()[:n_prompts]
    params = dataclasses.replace(s.params, seed=seed)
    chunk = s.cfg.rollout.prompts_per_step * s.cfg.rollout.group_size
    solved, failed = 0.0, 0
    for lo in range(0, len(examples), chunk):
        part = examples[lo:lo + chunk]
        prompts = s.prompt_texts(part)
        batch = s.engine.generate(prompts, 1, params)
        futures = scoring.submit(s.pool, batch.texts, part, s.request_options(prompts), s.cfg.reward.deadline_ms,
                                 tag=f"eval{seed}-{lo}")
        scored = scoring.collect(futures)
        solved += sum(scored.metrics.get(s.task.success_metric, []))
        failed += scored.masked
    n = max(1, len(examples))
    return {"eval/success": solved / n, "eval/failed_scoring": float(failed), "eval/prompts": float(len(examples))}
