"""`botgrpo bench eval`: completions scored per second through the eval pipeline (generate, then
score with the task's service and, for React tasks, the render pass), per task and worker count.

Each configuration runs `repeats` times on the same problems, run r with sampling seed r (so every
configuration scores the same completions, and no service cache carries over between runs), and
reports the median. Service start-up and model loading
are timed separately and left out of the rate; a warm-up round runs first on each pool.
"""

from __future__ import annotations

import statistics
import time
from contextlib import ExitStack
from dataclasses import dataclass, replace
from typing import Callable

from botgrpo_cli.errors import UserError

TASKS = ("react_synth", "arith_synth")


@dataclass
class Row:
    task: str
    workers: int  # 0: generation alone, no scoring
    completions: int
    median_s: float
    start_s: float  # service start-up (not in median_s)

    @property
    def per_s(self) -> float:
        return self.completions / self.median_s


def _median_time(fn: Callable[[int], None], repeats: int) -> float:
    times = []
    for r in range(repeats):
        t0 = time.perf_counter()
        fn(r)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def bench_task(name: str, workers: tuple[int, ...], problems: int, n: int, repeats: int, max_new_tokens: int | None,
               render: bool, progress: Callable[[str], None]) -> list[Row]:
    from botgrpo_cli.bootstrap import bootstrap
    from botgrpo_cli.config import RewardConfig, RolloutConfig
    from botgrpo_cli.evaluation import models
    from botgrpo_cli.evaluation.pools import open_scoring
    from botgrpo_cli.evaluation.sampling import evaluate
    from botgrpo_cli.rollout import FastEngine, SamplingParams
    from botgrpo_tasks import get_task

    task = get_task(name)
    progress(f"{name}: bootstrapping / loading the tiny model")
    try:
        model_dir = bootstrap(task)
    except NotImplementedError:
        raise UserError(f"bench eval runs on bootstrapped tiny models, and task {name!r} has no corpus to build "
                        f"one from; use {' or '.join(TASKS)}") from None
    model, tok = models.load(models.Target("model", str(model_dir)))
    examples = task.eval_examples()[:problems]
    params = SamplingParams.from_config(RolloutConfig(max_new_tokens=max_new_tokens), task)  # as eval samples
    prompts = [task.format_prompt(ex, tok) for ex in examples]
    engine = FastEngine(model, tok)
    progress(f"{name}: generation alone")
    rows = [Row(name, 0, problems * n, _median_time(
        lambda r: engine.generate(prompts, n, replace(params, seed=r)), repeats), 0.0)]
    for w in workers:
        progress(f"{name}: {w} reward worker(s)")
        with ExitStack() as stack:
            t0 = time.perf_counter()
            scoring = open_scoring(stack, task, RewardConfig(workers=w), render)  # as eval opens them
            start_s = time.perf_counter() - t0

            def once(seed: int, k: int = problems) -> None:
                evaluate(engine, examples[:k], prompts[:k], n, replace(params, seed=seed), scoring,
                         batch_size=problems)

            once(999, k=min(2, problems))  # warm-up: first requests pay for lazy service set-up
            rows.append(Row(name, w, problems * n, _median_time(once, repeats), start_s))
    return rows


def run(tasks: tuple[str, ...] = TASKS, workers: tuple[int, ...] = (1, 2), problems: int = 8, n: int = 4,
        repeats: int = 3, max_new_tokens: int | None = None, render: bool = True,
        progress: Callable[[str], None] = lambda msg: None) -> list[Row]:
    rows: list[Row] = []
    for name in tasks:
        rows += bench_task(name, workers, problems, n, repeats, max_new_tokens, render, progress)
    return rows
