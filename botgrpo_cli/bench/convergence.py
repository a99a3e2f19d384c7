"""`botgrpo bench convergence`: steps to a target success rate, per algorithm over seeds.

Every (algorithm, seed) pair trains from the same bootstrapped model with the same settings, in
its own process (`--parallel J` at a time); the pair for seed s sees the same prompts in the same
order whatever the algorithm. Finished pairs are kept in the work directory and not re-run; an
interrupted pair resumes from its last checkpoint. The summary (convergence.json) is computed
from the pairs' held-out evaluations, and convergence.md / convergence.png are drawn from it.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

from botgrpo_cli.bench.convergence_eval import EvalSpec
from botgrpo_cli.bench.convergence_pair import PairSpec, write_spec
from botgrpo_cli.bench.convergence_report import DIAGNOSTIC_COLUMNS, write_outputs
from botgrpo_cli.bench.convergence_stats import algo_summary, curve, speedups
from botgrpo_cli.errors import UserError

Echo = Callable[[str], None]


@dataclass
class Settings:
    task: str
    algos: list
    seeds: list
    steps: int
    eval_every: int
    targets: list
    metric: str
    eval_prompts: int
    eval_samples: int
    sets: list = field(default_factory=list)  # config overrides for every pair
    algo_sets: dict = field(default_factory=dict)  # algo -> config overrides for its pairs only (e.g. its lr)
    eval_service_options: dict = field(default_factory=dict)
    parallel: int = 1
    threads: int = 1
    work: str = "runs/convergence"
    out: str = "runs/convergence"

    def identity(self) -> dict:
        """What must not change between invocations sharing a work directory."""
        keep = ("task", "steps", "eval_every", "eval_prompts", "eval_samples", "sets", "eval_service_options")
        mine = {k: getattr(self, k) for k in keep}
        return mine | ({"algo_sets": self.algo_sets} if self.algo_sets else {})  # older work dirs stay valid

    def eval_spec(self) -> EvalSpec:
        """Held-out sampling with the training runs' task options, temperature and length limit."""
        from botgrpo_cli.config import load_config

        cfg = load_config(None, sets=list(self.sets))
        return EvalSpec(task=self.task, prompts=self.eval_prompts, samples=self.eval_samples,
                        task_options=dict(cfg.run.task_options), service_options=dict(self.eval_service_options),
                        temperature=cfg.rollout.temperature, top_p=cfg.rollout.top_p,
                        max_new_tokens=cfg.rollout.max_new_tokens)


def check_work_dir(settings: Settings) -> Path:
    """Create the work directory, or check that the runs in it were made with the same settings."""
    work = Path(settings.work)
    work.mkdir(parents=True, exist_ok=True)
    path = work / "settings.json"
    mine = settings.identity()
    if path.exists():
        theirs = json.loads(path.read_text())
        diff = sorted(k for k in set(mine) | set(theirs) if mine.get(k) != theirs.get(k))
        if diff:
            was = ", ".join(f"{k}={theirs.get(k)!r}" for k in diff)
            raise UserError(f"{work} holds runs made with other settings ({was}); use the same settings to "
                            f"continue them or pass another --work directory")
    else:
        path.write_text(json.dumps(mine, indent=1))
    return work


def check_base_model(base: Path, work: Path) -> None:
    """All pairs of a work directory start from one model: refuse to mix in a rebuilt one."""
    path = work / "base_model.json"
    if path.exists():
        used = json.loads(path.read_text())["path"]
        if used != str(base):
            raise UserError(f"the runs in {work} started from {used}, but the bootstrapped model is now {base} "
                            f"(its recipe changed); pass another --work directory to start over with it")
    else:
        path.write_text(json.dumps({"path": str(base)}))


def pair_dir(work: Path, algo: str, seed: int) -> Path:
    return work / f"{algo}-s{seed}"


def run_pairs(settings: Settings, base: Path, work: Path, echo: Echo) -> None:
    """Start each unfinished pair as a subprocess, at most `parallel` at once; raise if any fails."""
    todo = [(a, s) for s in settings.seeds for a in settings.algos
            if not (pair_dir(work, a, s) / "result.json").exists()]
    done = len(settings.algos) * len(settings.seeds) - len(todo)
    if done:
        echo(f"{done} finished pair(s) kept from {work}")
    running: dict[tuple[str, int], tuple[subprocess.Popen, float]] = {}
    failed: list[str] = []
    try:
        while todo or running:
            while todo and len(running) < settings.parallel:
                algo, seed = todo.pop(0)
                running[(algo, seed)] = (_start(settings, base, work, algo, seed), time.perf_counter())
                echo(f"started {algo} seed {seed}")
            time.sleep(0.5)
            for key, (proc, t0) in list(running.items()):
                if proc.poll() is None:
                    continue
                del running[key]
                log = pair_dir(work, *key) / "log.txt"
                if proc.returncode == 0:
                    echo(f"finished {key[0]} seed {key[1]} in {time.perf_counter() - t0:.0f} s")
                else:
                    failed.append(f"{key[0]} seed {key[1]} (exit {proc.returncode}; see {log})")
    finally:
        for proc, _ in running.values():  # interrupted: stop our own children; they resume next time
            proc.terminate()
    if failed:
        raise UserError(f"{len(failed)} run(s) failed: {'; '.join(failed)}. Finished runs are kept; rerun the "
                        f"same command to retry the rest")


def _start(settings: Settings, base: Path, work: Path, algo: str, seed: int) -> subprocess.Popen:
    d = pair_dir(work, algo, seed)
    spec = PairSpec(algo=algo, seed=seed, steps=settings.steps, eval_every=settings.eval_every,
                    base_model=str(base), threads=settings.threads,
                    sets=[*settings.sets, *settings.algo_sets.get(algo, [])],
                    eval=asdict(settings.eval_spec()))
    path = write_spec(spec, d)
    env = {**os.environ, "OMP_NUM_THREADS": str(settings.threads)}
    with (d / "log.txt").open("a") as log:  # the child keeps its own handle
        return subprocess.Popen([sys.executable, "-m", "botgrpo_cli.bench.convergence_pair", str(path)],
                                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)


def summarize(settings: Settings, base: Path, work: Path) -> dict:
    """The benchmark's JSON: per algorithm, steps to each target over seeds, curves, diagnostics."""
    baseline = "grpo" if "grpo" in settings.algos else settings.algos[0]
    summaries: dict[str, dict] = {}
    for algo in settings.algos:
        runs = [json.loads((pair_dir(work, algo, s) / "result.json").read_text()) for s in settings.seeds]
        summary = algo_summary(runs, settings.metric, settings.targets)
        summary["curve"] = _band([curve(r["evals"], settings.metric) for r in runs])
        summary["runs"] = {str(r["seed"]): {"curve": curve(r["evals"], settings.metric),
                                            "train_seconds": r["train_seconds"],
                                            "eval_seconds": r["eval_seconds"]} for r in runs}
        summary["diagnostics"] = _diagnostics(runs, settings.steps)
        summaries[algo] = summary
    speedups(summaries, baseline, settings.targets)
    return {"benchmark": "convergence", "task": settings.task, "metric": settings.metric,
            "targets": settings.targets, "baseline": baseline, "base_model": str(base),
            "settings": {k: v for k, v in asdict(settings).items() if k not in ("work", "out")},
            "algorithms": summaries}


def _band(curves: list[list[tuple[int, float]]]) -> dict:
    """Median, min and max over seeds at each step that every seed evaluated."""
    per_seed = [dict(c) for c in curves]
    steps = sorted(set.intersection(*(set(c) for c in per_seed)))
    columns = [[c[st] for c in per_seed] for st in steps]
    return {"steps": steps, "median": [statistics.median(c) for c in columns],
            "min": [min(c) for c in columns], "max": [max(c) for c in columns]}


def _diagnostics(runs: list[dict], steps: int) -> dict:
    """Training-batch statistics, mean over seeds: over all steps ("all") and per quarter of the run
    (the share of zero-variance groups, for one, changes as success rises)."""
    quarters = [(q * steps // 4 + 1, (q + 1) * steps // 4) for q in range(4)]
    out: dict = {}
    for name, (lo, hi) in [("all", (1, steps)), *((f"steps {lo}-{hi}", (lo, hi)) for lo, hi in quarters)]:
        rows = [m for r in runs for m in r["train_metrics"] if lo <= m["step"] <= hi]
        out[name] = {}
        for key in DIAGNOSTIC_COLUMNS:
            values = [m[key] for m in rows if m.get(key) is not None]
            out[name][key] = sum(values) / len(values) if values else None
    return out


def run_benchmark(settings: Settings, echo: Echo) -> dict:
    """Run (or continue) every pair, then write convergence.json, .md and .png into settings.out."""
    from botgrpo_cli.bootstrap import bootstrap

    from botgrpo_tasks import get_task

    work = check_work_dir(settings)
    base = bootstrap(get_task(settings.task, **settings.eval_spec().task_options))  # a variant's own warm start
    check_base_model(base, work)
    run_pairs(settings, base, work, echo)
    summary = summarize(settings, base, work)
    write_outputs(summary, Path(settings.out))
    return summary
