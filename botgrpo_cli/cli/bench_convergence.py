"""`botgrpo bench convergence`: steps to a target held-out success rate, per algorithm over seeds."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Optional

import typer

from botgrpo_cli.cli.options import CHOICES, Threads, comma_list, listing_choices
from botgrpo_cli.console import console, out
from botgrpo_cli.errors import UserError

# Per-task defaults of the benchmark (none now: react_synth's success metric all_ok needs the
# syntax, type and spec stages its reward already runs).
TASK_DEFAULTS: dict[str, dict] = {}


def _targets(text: str) -> list[float]:
    values = comma_list(text, "--target", float, "0.8,0.95")
    if not all(0 < v <= 1 for v in values):
        raise UserError(f"--target {text!r}: every target must be in (0, 1]")
    return values


def _check(task: str, algos: list[str], metric: str | None, samples: int) -> str:
    """Validate task, presets and metric; returns the metric (the task's success metric by default)."""
    from botgrpo_cli.algos import PRESETS
    from botgrpo_cli.bench.convergence_report import pass_k_of
    from botgrpo_tasks import get_task

    unknown = [a for a in algos if a not in PRESETS]
    if unknown:
        raise UserError(f"--algos: unknown preset(s) {', '.join(unknown)}; known: {', '.join(sorted(PRESETS))}")
    t = get_task(task)
    metric = metric or t.success_metric
    k = pass_k_of(metric)
    if k is None and metric not in (t.success_metric, *t.eval_metrics):
        raise UserError(f"--metric {metric!r}: {task} measures {', '.join(t.eval_metrics)}, or use pass@k")
    if k is not None and k > samples:
        raise UserError(f"--metric {metric} needs at least {k} samples per prompt; pass --eval-samples {k}")
    return metric


def _algo_sets(items: list[str], algos: list[str]) -> dict[str, list[str]]:
    """ALGO:KEY=VALUE items -> {algo: [KEY=VALUE, ...]}, e.g. a learning rate chosen per method."""
    out: dict[str, list[str]] = {}
    for item in items:
        algo, sep, override = item.partition(":")
        if not sep or "=" not in override or algo not in algos:
            raise UserError(f"--algo-set {item!r}: write ALGO:KEY=VALUE with ALGO one of {', '.join(algos)}, "
                            f"e.g. grpo:optim.lr=3e-3")
        out.setdefault(algo, []).append(override)
    return out


def _check_prompts(task: str, options: dict, wanted: int) -> None:
    from botgrpo_tasks import get_task

    have = len(get_task(task, **options).eval_examples())
    if have < wanted:
        raise UserError(f"--eval-prompts {wanted}: {task} has {have} held-out prompts; ask for at most {have} "
                        f"or more with --set run.task_options={{n_eval: {wanted}}}")


def register(app: typer.Typer) -> None:
    @app.command("convergence", cls=listing_choices(algos="botgrpo_cli.algos:PRESETS"))
    def bench_convergence(
        task: Annotated[str, typer.Option(help="Task; the start is --set model.name_or_path=... when given, else the task's bootstrapped tiny model.")] = "react_synth",
        algos: Annotated[str, typer.Option(help=f"Comma-separated presets ({CHOICES}); speed-ups are against grpo (or the first).")] = "grpo,bot_grpo",
        seeds: Annotated[int, typer.Option(help="Seeds per algorithm (seed-start .. seed-start+N-1).")] = 3,
        seed_start: Annotated[int, typer.Option(help="First seed (e.g. a seed kept apart for tuning).")] = 0,
        steps: Annotated[int, typer.Option(help="Training steps per run.")] = 80,
        target: Annotated[str, typer.Option(help="Target value(s) of the metric, comma-separated.")] = "0.8,0.95",
        metric: Annotated[Optional[str], typer.Option(help="Service metric or pass@k; default: the task's success metric.")] = None,
        eval_every: Annotated[int, typer.Option(help="Evaluate (and checkpoint) every N steps.")] = 5,
        eval_prompts: Annotated[int, typer.Option(help="Held-out prompts per evaluation.")] = 256,
        eval_samples: Annotated[int, typer.Option(help="Samples per held-out prompt (at least k for pass@k).")] = 2,
        sets: Annotated[Optional[list[str]], typer.Option("--set", help="Config override for every run, e.g. optim.lr=3e-4 (repeatable).")] = None,
        algo_sets: Annotated[Optional[list[str]], typer.Option("--algo-set", help="Config override for one algorithm's runs, ALGO:KEY=VALUE, e.g. grpo:optim.lr=3e-3 (repeatable).")] = None,
        parallel: Annotated[int, typer.Option(help="Runs at once, each in its own process.")] = 1,
        threads: Threads = 0,
        out_dir: Annotated[Optional[Path], typer.Option("--out", help="Where convergence.md/.json/.png go; default runs/convergence-TASK.")] = None,
        work: Annotated[Optional[Path], typer.Option(help="Run directories (resumable); default runs/convergence-TASK/runs.")] = None,
    ) -> None:
        """Train every (algorithm, seed) pair from the same base model and report steps to target."""
        from botgrpo_cli.bench.convergence import Settings, run_benchmark
        from botgrpo_cli.bench.convergence_report import table_rows
        from botgrpo_cli.config import load_config

        names = comma_list(algos, "--algos", example="grpo,bot_grpo")
        if min(seeds, steps, eval_every, eval_prompts, eval_samples, parallel) < 1 or min(threads, seed_start) < 0:
            raise UserError("--seeds, --steps, --eval-every, --eval-prompts, --eval-samples and --parallel "
                            "must be at least 1, --threads and --seed-start at least 0")
        metric_name = _check(task, names, metric, eval_samples)
        defaults = TASK_DEFAULTS.get(task, {})
        shared = [*defaults.get("sets", []), *(sets or [])]
        cfg = load_config(None, sets=shared)  # a bad --set fails here, before any run starts
        per_algo = _algo_sets(algo_sets or [], names)
        for extra in per_algo.values():
            load_config(None, sets=[*shared, *extra])
        _check_prompts(task, cfg.run.task_options, eval_prompts)
        out_path = out_dir or Path("runs") / f"convergence-{task}"
        work_path = work or Path("runs") / f"convergence-{task}" / "runs"
        settings = Settings(
            task=task, algos=names, seeds=list(range(seed_start, seed_start + seeds)), steps=steps, eval_every=eval_every,
            targets=_targets(target), metric=metric_name, eval_prompts=eval_prompts,
            eval_samples=eval_samples, sets=shared, algo_sets=per_algo, eval_service_options=defaults.get("eval_service_options", {}),
            parallel=parallel, threads=threads or max(1, (os.cpu_count() or 1) // parallel),
            work=str(work_path), out=str(out_path))
        import shlex
        import sys

        out.print("command: botgrpo " + shlex.join(sys.argv[1:]), markup=False, highlight=False, soft_wrap=True)
        console.print(f"[bold]bench convergence:[/] {', '.join(names)} on {task}, {seeds} seed(s), {steps} steps, "
                      f"{settings.metric} on {eval_prompts}x{eval_samples} held-out samples every {eval_every} steps")
        summary = run_benchmark(settings, lambda msg: console.print(msg))
        rows = table_rows(summary)
        for row in rows:
            out.print(" | ".join(row), markup=False, highlight=False, soft_wrap=True)
        out.print(f"written: {out_path / 'convergence.md'}, convergence.json, convergence.png", markup=False,
                  soft_wrap=True)
