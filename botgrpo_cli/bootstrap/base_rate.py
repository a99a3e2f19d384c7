"""Measure a freshly built model: its success rate at temperature 1 on eval prompts, through the
evaluation path (the task's service as a child process, the same success rule as `botgrpo eval`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from botgrpo_tasks import Task

Progress = Callable[[str, int, int], None]  # (stage, done, total)
BATCH = 64  # prompts per generate call


def measure(task: Task, model: Any, tokenizer: Any, n: int, seed: int, progress: Progress) -> dict[str, Any]:
    """Base success rate on the first `n` eval prompts (one sample each); the service's metric
    means over scored samples. A variant whose warm start learned tools is measured calling them
    (multi-turn, as it is run). A service that cannot start leaves the rate unmeasured."""
    from botgrpo_cli.evaluation.metrics import metric_means, success_rate
    from botgrpo_cli.evaluation.sampling import Scoring, held_out
    from botgrpo_cli.reward_client import RewardPool, ServiceStartError
    from botgrpo_cli.config import RolloutConfig
    from botgrpo_cli.rollout import FastEngine, SamplingParams
    from botgrpo_cli.rollout.turns import build_settings, turns_over

    total = min(n, len(task.eval_examples()))
    progress("sample", 0, total)
    done = [0]

    def tick(k: int) -> None:
        done[0] += k
        progress("sample", done[0], total)

    params = SamplingParams.from_config(RolloutConfig(), task, seed=seed)  # the defaults training samples with
    tools = list(getattr(task, "warm_start_tools", ()))
    settings = build_settings(tools, None, None, task, {}, None, tool_workers=1) if tools else None
    try:
        with RewardPool(task.service) as pool, turns_over(FastEngine(model, tokenizer), tokenizer, task,
                                                          settings) as engine:
            problems = held_out(engine, tokenizer, task, Scoring.of_task(task, pool), params, n, batch_size=BATCH,
                                tick=tick)
    except (ImportError, OSError, ServiceStartError) as err:  # no service here: the model is still usable
        return {"base_success_rate": None, "measure_error": f"could not start service {task.service!r}: {err}"}
    progress("score", total, total)
    rate = success_rate(problems)
    means = metric_means(problems, list(dict.fromkeys((task.success_metric, *task.eval_metrics))))
    return {"base_success_rate": rate, "base_metrics": {**means, task.success_metric: rate}, "n_measured": total,
            **({"measured_with_tools": tools} if tools else {})}
