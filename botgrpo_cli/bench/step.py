"""`botgrpo bench step`: one training step's time, its split and peak memory, per preset, side by side;
or (run_scaling) one process against several on the same global batch.

Each run is its own subprocess (so RSS high-water marks are per run) on the task's tiny model at
SHAPE (8 prompts x 8 completions x 48 new tokens, unless --set changes it); the first step is a
warm-up and not counted.
"""

from __future__ import annotations

import json
import resource
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from botgrpo_cli.errors import UserError
from botgrpo_cli.rundir import read_metrics

SHAPE = ["rollout.prompts_per_step=8", "rollout.group_size=8", "rollout.max_new_tokens=48", "reward.workers=2",
         "log.tensorboard=false", "log.samples_every=0", "run.save_every=0"]  # micro-batch: by memory


def shape_of(algo: str, sets: list[str] | tuple[str, ...] = ()) -> str:
    """The batch a run of preset `algo` trains at, in words: SHAPE's, as `sets` (applied after it, as
    the runs apply them) leave it."""
    from botgrpo_cli.config import load_config

    r = load_config(None, sets=[*SHAPE, *sets], algo=algo).rollout
    return f"{r.prompts_per_step} prompts x {r.group_size} completions x {r.max_new_tokens} new tokens"


@dataclass
class StepFigures:
    algo: str  # the preset, with " M=k" when the run set algo.mini_batches
    step_s: float  # medians over the timed steps
    generate_s: float
    reward_s: float  # time blocked on scoring after the overlapped log-prob pass
    logp_s: float
    update_s: float  # advantage + loss + backward + optimizer
    peak_rss_mb: float
    steps: int
    updates: float = 1.0  # optimizer steps per rollout batch (update/steps)
    clip_frac: float = 0.0  # mean over the optimizer steps
    tokens_s: float = 0.0  # completion tokens trained per second of step (generated and trained, end to end)
    staleness: float = 0.0  # mean async/staleness of the timed steps (rollout.max_staleness > 0)
    held_out: float = float("nan")  # eval/success after the last step, when the run evaluates it (run.eval_every)

    @property
    def reward_share(self) -> float:
        return self.reward_s / self.step_s


def measure(algo: str, steps: int, task: str, threads: int, out_dir: Path, model: str = "",
            mini_batches: int = 0, sets: list[str] | tuple[str, ...] = ()) -> StepFigures:
    """Train `steps` + 1 steps in this process and return the medians of all but the first.
    mini_batches > 0 overrides the preset's algo.mini_batches; `sets` are config overrides (last)."""
    from botgrpo_cli.config import load_config
    from botgrpo_cli.trainer import train

    extra = [f"algo.mini_batches={mini_batches}"] if mini_batches else []
    cfg = load_config(None, algo=algo, sets=[*SHAPE, f"run.task={task}", f"run.steps={steps + 1}",
                                             f"run.threads={threads}", *extra, *sets])
    cfg.run.out_dir, cfg.model.name_or_path = str(out_dir), model or None
    records = train(cfg).metrics[1:]
    rows = cfg.rollout.prompts_per_step * cfg.rollout.group_size

    def med(key: str) -> float:
        return statistics.median(r[key] for r in records)

    tokens_s = statistics.median(r["completion/length_mean"] * rows / r["time/step_s"] for r in records)
    stale = statistics.fmean(r.get("async/staleness", 0.0) for r in records)
    held_out = records[-1].get("eval/success", float("nan"))

    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB
    return StepFigures(_label(algo, mini_batches, sets), med("time/step_s"), med("time/generate_s"), med("time/reward_s"),
                       med("time/logp_s"), med("time/update_s"), peak_mb, len(records), med("update/steps"),
                       med("clip_frac"), tokens_s, stale, held_out)


def _label(algo: str, mini_batches: int, sets: list[str] | tuple[str, ...] = ()) -> str:
    staleness = [x.split("=", 1)[1] for x in sets if x.startswith("rollout.max_staleness=")]
    return (f"{algo} M={mini_batches}" if mini_batches else algo) + (f" s={staleness[-1]}" if staleness else "")


def _one(algo: str, steps: int, task: str, threads: int, model: str | None, out: Path,
         mini_batches: int = 0, sets: list[str] | tuple[str, ...] = ()) -> StepFigures:
    argv = [sys.executable, "-m", "botgrpo_cli.bench.step", algo, str(steps), task, str(threads), str(out), model or "",
            str(mini_batches), *sets]
    proc = subprocess.run(argv, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise UserError(f"bench step for {algo} failed: {' | '.join(tail)}")
    return StepFigures(**json.loads(proc.stdout.strip().splitlines()[-1]))


def run(algos: list[str], steps: int, task: str, threads: int, model: str | None = None,
        repeats: int = 2, mini_batches: list[int] | None = None, sets: list[str] | tuple[str, ...] = (),
        staleness: list[int] | None = None) -> list[StepFigures]:
    """Measure each preset (at each of `mini_batches`, and each rollout.max_staleness of `staleness`,
    when given) in fresh subprocesses, `repeats` rounds, the order reversed every other round (so
    load from other processes hits them alike); medians over all timed steps and runs."""
    if steps < 1 or repeats < 1 or any(m < 1 for m in mini_batches or []) or any(k < 0 for k in staleness or []):
        raise UserError("--steps, --repeats and every --mini-batches value must be at least 1, --async values 0 or more")
    variants = [(a, m, k) for a in algos for m in (mini_batches or [0]) for k in (staleness or [None])]
    runs: dict[tuple[str, int, int | None], list[StepFigures]] = {v: [] for v in variants}

    def with_bound(k: int | None) -> list[str]:
        return [*sets, *([] if k is None else [f"rollout.max_staleness={k}"])]

    with tempfile.TemporaryDirectory(prefix="botgrpo-bench-step-") as tmp:
        for r in range(repeats):
            # reversed every other round, so a drift in load lands on each variant alike
            for algo, m, k in (variants if r % 2 == 0 else variants[::-1]):
                runs[algo, m, k].append(_one(algo, steps, task, threads, model, Path(tmp) / f"{algo}-{m}-{k}-{r}", m,
                                             with_bound(k)))
    return [_median_of(_label(a, m, with_bound(k)), figs) for (a, m, k), figs in runs.items()]


@dataclass
class ScaleFigures:
    processes: int
    threads: int  # torch threads per process
    step_s: float  # medians over the timed steps of all repeats; times are the slowest process's
    generate_s: float
    logp_s: float
    reward_s: float
    update_s: float
    steps: int


def _train_timed(algo: str, steps: int, task: str, threads: int, model: str | None, processes: int,
                 out: Path) -> list[dict]:
    """`botgrpo train` in `processes` processes; the metrics of every step but the warm-up."""
    argv = [sys.executable, "-m", "botgrpo_cli", "train", "--algo", algo, "--steps", str(steps + 1), "--out", str(out),
            "--num-processes", str(processes), *[a for s in [*SHAPE, f"run.task={task}", f"run.threads={threads}"]
                                                  for a in ("--set", s)]]
    if model:
        argv += ["--set", f"model.name_or_path={model}"]
    proc = subprocess.run(argv, capture_output=True, text=True)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise UserError(f"bench step with {processes} processes failed: {' | '.join(tail)}")
    return read_metrics(out)[1:]


def run_scaling(processes: int, algo: str, steps: int, task: str, threads: int, model: str | None = None,
                repeats: int = 2) -> list[ScaleFigures]:
    """The same global batch on one process with `threads` threads, on `processes` processes with
    threads // processes each (the same cores), and on one process with that many threads (the
    same per-process setting), alternating layouts `repeats` times."""
    if steps < 1 or repeats < 1 or processes < 2:
        raise UserError("--steps and --repeats must be at least 1, --num-processes at least 2")
    per = max(1, threads // processes)
    layouts = list(dict.fromkeys([(1, threads), (1, per), (processes, per)]))
    records: dict[tuple[int, int], list[dict]] = {layout: [] for layout in layouts}
    with tempfile.TemporaryDirectory(prefix="botgrpo-bench-scale-") as tmp:
        for r in range(repeats):
            for n, t in layouts:
                records[n, t] += _train_timed(algo, steps, task, t, model, n, Path(tmp) / f"{n}x{t}-{r}")

    def med(layout: tuple[int, int], key: str) -> float:
        return statistics.median(rec[key] for rec in records[layout])

    return [ScaleFigures(n, t, med((n, t), "time/step_s"), med((n, t), "time/generate_s"), med((n, t), "time/logp_s"),
                         med((n, t), "time/reward_s"), med((n, t), "time/update_s"), len(records[n, t]))
            for n, t in layouts]


def _median_of(algo: str, figs: list[StepFigures]) -> StepFigures:
    keys = ("step_s", "generate_s", "reward_s", "logp_s", "update_s", "peak_rss_mb", "updates", "clip_frac",
            "tokens_s", "staleness", "held_out")
    med = {k: statistics.median(getattr(f, k) for f in figs) for k in keys}
    return StepFigures(algo=algo, steps=sum(f.steps for f in figs), **med)


if __name__ == "__main__":  # the per-preset worker: prints one JSON line
    a, n, t, th, o, m, mb = sys.argv[1:8]
    fig = measure(a, int(n), t, int(th), Path(o), m, int(mb), sys.argv[8:])
    print(json.dumps(fig.__dict__))
