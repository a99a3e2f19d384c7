"""One (algorithm, seed) run of the convergence benchmark, resumable; runs in its own process.

    python -m botgrpo_cli.bench.convergence_pair PAIR_DIR/spec.json

Trains with a checkpoint at every evaluation step (an interrupted run resumes from the last one),
then evaluates the base model (step 0) and each checkpoint on the held-out prompts (evaluations
already recorded in evals.jsonl are kept), and finally writes result.json, which marks the pair
finished.
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from botgrpo_cli import rundir
from botgrpo_cli.bench.convergence_eval import EvalSpec, evaluate_model

# Per-step training metrics kept in result.json to explain the outcome (signal, credit, length).
DIAGNOSTICS = ("success", "groups/zero_variance_frac", "adv/mean", "adv/std", "completion/length_mean",
               "completion/finished_frac", "entropy", "clip_frac", "grad_norm", "reward/mean")


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


def main(argv: list[str]) -> int:
    spec_path = Path(argv[0])
    spec = PairSpec(**json.loads(spec_path.read_text()))
    run_pair(spec, spec_path.parent)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
