"""`botgrpo bench convergence`: steps to a target success rate, per algorithm over seeds; the
whole harness (the numbers and outputs are convergence_report.py).

Every (algorithm, seed) pair trains from the same bootstrapped model with the same settings, in
its own process (`--parallel J` at a time; `python -m botgrpo_cli.bench.convergence PAIR/spec.json`);
the pair for seed s sees the same prompts in the same order whatever the algorithm. A pair trains
with a checkpoint at every evaluation step (an interrupted pair resumes from its last one), then
evaluates the base model (step 0) and each checkpoint on the held-out prompts through the
evaluation path (evaluation/sampling.py; records already in evals.jsonl are kept), and writes
result.json, which marks it finished. Every evaluation samples the same prompts with the same seed,
so checkpoints and algorithms are compared on common random numbers; a record keeps per-prompt
success counts (any pass@k with k <= samples follows) and the service metrics' means. The summary
(convergence.json) is computed from the pairs' records, and convergence.md / .png are drawn from it.
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

import torch

from botgrpo_cli import rundir
from botgrpo_cli.bench.convergence_report import (algo_summary, band, curve, diagnostics, guard, seconds_at, speedups,
                                                  write_outputs)
from botgrpo_cli.bench.provenance import provenance
from botgrpo_cli.errors import UserError
from botgrpo_cli.trainer.distributed import STOP_GRACE_S
from botgrpo_base.child import LineChild, terminate_all


Echo = Callable[[str], None]
EVAL_SEED = 20261130  # one seed for every evaluation: comparable samples across checkpoints
# Per-step training metrics kept in result.json to explain the outcome (signal, credit, length).
DIAGNOSTICS = ("success", "groups/zero_variance_frac", "adv/mean", "adv/std", "completion/length_mean",
               "completion/finished_frac", "entropy", "clip_frac", "grad_norm", "reward/mean",
               "reward/compile", "reward/spec_ok",  # react: the compile rate and the spec kept beside it
               "time/step_s")  # seconds to a target (the token reward's cost counted), curves against time


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
        """Held-out sampling with the training runs' task options, temperature, length limit and turns."""
        from botgrpo_cli.config import load_config

        cfg = load_config(None, sets=list(self.sets))
        return EvalSpec(task=self.task, prompts=self.eval_prompts, samples=self.eval_samples,
                        task_options=dict(cfg.run.task_options), service_options=dict(self.eval_service_options),
                        temperature=cfg.rollout.temperature, top_p=cfg.rollout.top_p,
                        max_new_tokens=cfg.rollout.max_new_tokens, max_turns=cfg.rollout.max_turns,
                        tools=list(cfg.run.tools), environment=cfg.run.environment,
                        tool_deadline_s=cfg.rollout.tool_deadline_s,
                        environment_deadline_s=cfg.rollout.environment_deadline_s)


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
    # multi-turn as in training (rollout.max_turns, run.tools, run.environment): tool calls, an
    # environment's messages or a revising task's repair turns; None / [] / None: single turns
    max_turns: int | None = None
    tools: list = field(default_factory=list)
    environment: str | None = None
    tool_deadline_s: float = 10.0
    environment_deadline_s: float = 30.0


@dataclass
class PairSpec:
    algo: str
    seed: int
    steps: int
    eval_every: int
    base_model: str
    threads: int
    sets: list = field(default_factory=list)  # config overrides shared by every pair
    eval: dict = field(default_factory=dict)  # EvalSpec fields

    def eval_steps(self) -> list[int]:
        """0 (the base model), every eval_every steps, and the last step."""
        steps = list(range(0, self.steps + 1, self.eval_every))
        return steps if steps[-1] == self.steps else [*steps, self.steps]


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
    """All pairs of a work directory start from one model: refuse to mix in a rebuilt one. The
    model is known by its folder's name (a bootstrapped one's carries its recipe hash), so finished
    runs committed with their records carry over to another checkout or cache location."""
    path = work / "base_model.json"
    if path.exists():
        used = json.loads(path.read_text())["path"]
        if Path(used).name != Path(base).name:
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
    running: dict[tuple[str, int], tuple[LineChild, float]] = {}
    failed: list[str] = []
    try:
        while todo or running:
            while todo and len(running) < settings.parallel:
                algo, seed = todo.pop(0)
                running[(algo, seed)] = (_start(settings, base, work, algo, seed), time.perf_counter())
                echo(f"started {algo} seed {seed}")
            time.sleep(0.5)
            for key, (child, t0) in list(running.items()):
                if not child.exited:
                    continue
                del running[key]
                log = pair_dir(work, *key) / "log.txt"
                if child.returncode == 0:
                    echo(f"finished {key[0]} seed {key[1]} in {time.perf_counter() - t0:.0f} s")
                else:
                    failed.append(f"{key[0]} seed {key[1]} (exit {child.returncode}; see {log})")
    finally:  # interrupted: our own children save their last step and stop; they resume next time
        terminate_all([child for child, _ in running.values()], STOP_GRACE_S)
    if failed:
        raise UserError(f"{len(failed)} run(s) failed: {'; '.join(failed)}. Finished runs are kept; rerun the "
                        f"same command to retry the rest")


def _start(settings: Settings, base: Path, work: Path, algo: str, seed: int) -> LineChild:
    d = pair_dir(work, algo, seed)
    spec = PairSpec(algo=algo, seed=seed, steps=settings.steps, eval_every=settings.eval_every,
                    base_model=str(base), threads=settings.threads,
                    sets=[*settings.sets, *settings.algo_sets.get(algo, [])],
                    eval=asdict(settings.eval_spec()))
    path = write_spec(spec, d)
    return LineChild([sys.executable, "-m", "botgrpo_cli.bench.convergence", str(path)], f"{algo}-s{seed}",
                     env={"OMP_NUM_THREADS": str(settings.threads)}, stdout=d / "log.txt", stderr="stdout",
                     own_group=True, stop_with_parent=True)


def summarize(settings: Settings, base: Path, work: Path) -> dict:
    """The benchmark's JSON: per algorithm, steps to each target over seeds, curves, diagnostics."""
    baseline = "grpo" if "grpo" in settings.algos else settings.algos[0]
    summaries: dict[str, dict] = {}
    for algo in settings.algos:
        runs = [json.loads((pair_dir(work, algo, s) / "result.json").read_text()) for s in settings.seeds]
        summary = algo_summary(runs, settings.metric, settings.targets)
        summary["curve"] = band([curve(r["evals"], settings.metric) for r in runs])
        summary["runs"] = {str(r["seed"]): {"curve": curve(r["evals"], settings.metric),
                                            "train_seconds": r["train_seconds"],
                                            "guard": guard(r["evals"]),
                                            "seconds": seconds_at(r["train_metrics"], [e["step"] for e in r["evals"]]),
                                            "eval_seconds": r["eval_seconds"]} for r in runs}
        summary["diagnostics"] = diagnostics(runs, settings.steps)
        summaries[algo] = summary
    speedups(summaries, baseline, settings.targets)
    return {"benchmark": "convergence", "task": settings.task, "metric": settings.metric,
            "targets": settings.targets, "baseline": baseline, "base_model": str(base),
            "settings": {k: v for k, v in asdict(settings).items() if k not in ("work", "out")},
            "provenance": provenance(), "algorithms": summaries}


def run_benchmark(settings: Settings, echo: Echo) -> dict:
    """Run (or continue) every pair, then write convergence.json, .md and .png into settings.out."""
    from botgrpo_cli.config import load_config
    from botgrpo_cli.trainer.policy import resolve_model_path

    work = check_work_dir(settings)
    # --set model.name_or_path=... (a real model: a folder, hub id or .gguf, resolved as training
    # does) is the start; otherwise the task's bootstrapped tiny model (a variant's own warm start).
    base = resolve_model_path(load_config(None, sets=settings.sets).model, settings.task,
                              settings.eval_spec().task_options)
    check_base_model(base, work)
    run_pairs(settings, base, work, echo)
    summary = summarize(settings, base, work)
    write_outputs(summary, Path(settings.out))
    return summary


def pair_config(spec: PairSpec, train_dir: Path):
    """The run's Config: the shared overrides, then the keys the benchmark needs fixed."""
    from botgrpo_cli.config import load_config

    fixed = [f"run.task={spec.eval['task']}", f"run.seed={spec.seed}", f"run.steps={spec.steps}",
             f"run.save_every={spec.eval_every}", f"run.keep_last={len(spec.eval_steps())}",
             "run.eval_every=0", f"run.threads={spec.threads}", f"run.out_dir={train_dir}",
             f"model.name_or_path={spec.base_model}", "log.samples_every=0", "log.tensorboard=false"]
    return load_config(None, sets=[*spec.sets, *fixed], algo=spec.algo)


def checkpoint_steps(train_dir: Path) -> dict[int, Path]:
    """Complete checkpoints by step (the trainer writes checkpoints/step-NNNNNN atomically)."""
    return {rundir.checkpoint_step(p): p for p in rundir.checkpoint_dirs(train_dir)}


def train_pair(spec: PairSpec, pair_dir: Path) -> None:
    """Train to spec.steps, resuming from the latest checkpoint; a run that died before its first
    checkpoint starts over."""
    from botgrpo_cli.trainer import train

    train_dir = pair_dir / "train"
    ckpts = checkpoint_steps(train_dir)
    if ckpts and max(ckpts) >= spec.steps:
        return
    if not ckpts and train_dir.exists():
        shutil.rmtree(train_dir)
    train(pair_config(spec, train_dir), resume=bool(ckpts))


def evaluate_pair(spec: PairSpec, pair_dir: Path) -> list[dict]:
    """Evaluate each checkpoint not yet in evals.jsonl; returns every record in step order."""
    from botgrpo_cli.reward_client import RewardPool
    from botgrpo_tasks import get_task

    path = pair_dir / "evals.jsonl"
    done = {r["step"]: r for r in rundir.read_jsonl(path)}
    todo = [s for s in spec.eval_steps() if s not in done]
    if todo:
        models = {0: Path(spec.base_model), **{s: p / "model" for s, p in checkpoint_steps(pair_dir / "train").items()}}
        missing = [s for s in todo if s not in models]
        if missing:
            raise RuntimeError(f"no checkpoint for evaluation step(s) {missing} in {pair_dir / 'train'}")
        espec = EvalSpec(**spec.eval)
        with RewardPool(get_task(espec.task).service) as pool, path.open("a") as fh:
            for step in todo:
                record = {"step": step, **evaluate_model(models[step], espec, pool, spec.threads)}
                fh.write(json.dumps(record) + "\n")
                fh.flush()
                done[step] = record
    return [done[s] for s in sorted(done)]


def run_pair(spec: PairSpec, pair_dir: Path) -> dict:
    """Train, evaluate, write result.json (unless it exists) and return it."""
    result_path = pair_dir / "result.json"
    if result_path.exists():
        return json.loads(result_path.read_text())
    t0 = time.perf_counter()
    train_pair(spec, pair_dir)
    evals = evaluate_pair(spec, pair_dir)
    metrics = rundir.read_metrics(pair_dir / "train")
    result = {
        "algo": spec.algo, "seed": spec.seed, "evals": evals,
        "train_seconds": round(sum(m.get("time/step_s") or 0.0 for m in metrics), 2),
        "eval_seconds": round(sum(r["seconds"] for r in evals), 2),
        "last_invocation_seconds": round(time.perf_counter() - t0, 2),
        "train_metrics": [{"step": m["step"], **{k: m.get(k) for k in DIAGNOSTICS}} for m in metrics],
    }
    tmp = result_path.with_suffix(".tmp")
    tmp.write_text(json.dumps(result))
    tmp.rename(result_path)
    return result


def write_spec(spec: PairSpec, pair_dir: Path) -> Path:
    pair_dir.mkdir(parents=True, exist_ok=True)
    path = pair_dir / "spec.json"
    path.write_text(json.dumps(asdict(spec), indent=1))
    return path


def evaluate_model(model_dir: Path | str, spec: EvalSpec, pool: Any, threads: int = 1) -> dict:
    """Sample `spec.samples` completions for each of `spec.prompts` held-out prompts and score them
    through the evaluation path (a LoRA checkpoint loads onto its base model, as in `botgrpo eval`).
    Failed scorings count as failures (they are reported in `failed`); metric means are over the
    scored samples, as in `botgrpo eval`. Multi-turn runs are evaluated multi-turn (the final
    attempt decides; `turns` is the mean number of model turns)."""
    from botgrpo_cli.evaluation import models
    from botgrpo_cli.evaluation.metrics import failed_scorings, metric_means
    from botgrpo_cli.evaluation.sampling import Scoring, held_out
    from botgrpo_cli.config import RolloutConfig
    from botgrpo_cli.rollout import FastEngine, SamplingParams
    from botgrpo_cli.rollout.turns import MultiTurn, build_settings, turns_over
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
        rollout = RolloutConfig(max_new_tokens=spec.max_new_tokens, temperature=spec.temperature, top_p=spec.top_p)
        params = SamplingParams.from_config(rollout, task, seed=EVAL_SEED)
        scoring = Scoring.of_task(task, pool, options=spec.service_options)
        settings = build_settings(list(spec.tools), spec.environment, spec.max_turns, task, {}, None,
                                  tool_deadline_s=spec.tool_deadline_s,
                                  environment_deadline_s=spec.environment_deadline_s)
        with turns_over(FastEngine(model, tok), tok, task, settings, pool, scoring.options,
                        scoring.deadline_ms) as engine:
            kwargs = engine.template_kwargs if isinstance(engine, MultiTurn) else None
            problems = held_out(engine, tok, task, scoring, params, spec.prompts, spec.samples,
                                batch_size=max(1, spec.chunk // spec.samples), template_kwargs=kwargs)
        names = sorted({k for p in problems for s in p.samples for k in s.metrics})
    finally:
        torch.set_num_threads(saved_threads)
    samples = [s for p in problems for s in p.samples]
    turns = {"turns": sum(s.turns for s in samples) / len(samples)} if settings is not None and samples else {}
    return {"samples": spec.samples, "prompts": len(problems), "counts": [p.correct for p in problems],
            "means": metric_means(problems, names), "success_metric": task.success_metric,
            "failed": failed_scorings(problems), "seconds": round(time.perf_counter() - t0, 2), **turns}


def main(argv: list[str]) -> int:
    spec_path = Path(argv[0])
    spec = PairSpec(**json.loads(spec_path.read_text()))
    run_pair(spec, spec_path.parent)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
