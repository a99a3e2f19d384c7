"""`botgrpo bench step --vs trl`: botgrpo's trainer and TRL's GRPOTrainer, side by side.

Both sides: the same model (the task's bootstrapped tiny model, or --model), the same prompts
(botgrpo's seeded prompt stream, fed to TRL in that order), outcome rewards from the task's reward
service (two processes each; for react, BOTGRPO_REACT_CHECKER forces one checker on both, named in the title),
8 prompts x 8 completions x 48 new tokens unless --shape says otherwise, temperature 1, beta 0, one
update per batch, CPU, the same torch threads, and the same precision: fp32, or bf16 autocast for
generation and forward/backward with fp32 weights on both (TRL's bf16=True, its generation wrapped
in the same autocast); `auto` is botgrpo's start-up rule.
Both processes import botgrpo_cli before torch, so both get its OpenMP spin count
(GOMP_SPINCOUNT=1000 unless the environment sets a policy or count). Each side runs in its own
subprocess (rounds alternate the order); its first step is a warm-up, not counted. Each step is
split into generate / reward / rest (log-probs, loss, backward, optimizer), and
its CPU seconds are reported too: on a shared machine they move less with load than wall time.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from botgrpo_cli.errors import UserError

TARGET = 0.7  # botgrpo's step time / TRL's


@dataclass(frozen=True)
class Shape:
    prompts: int = 8  # the shape of `botgrpo bench step`
    group: int = 8
    new_tokens: int = 48

    @classmethod
    def parse(cls, text: str) -> "Shape":
        """'8x8x48' (prompts x completions x new tokens)."""
        try:
            p, g, t = (int(x) for x in text.lower().split("x"))
        except ValueError:
            raise UserError(f"--shape {text!r}: write prompts x completions x new tokens, e.g. 8x8x48") from None
        if min(p, g, t) < 1 or g < 2:
            raise UserError(f"--shape {text!r}: every figure must be positive and completions at least 2")
        return cls(p, g, t)

    def __str__(self) -> str:
        return f"{self.prompts}x{self.group}x{self.new_tokens}"


@dataclass
class SideFigures:
    side: str
    step_s: float  # medians over the timed steps
    generate_s: float
    reward_s: float  # time spent waiting for scores
    rest_s: float  # log-probs, loss, backward, optimizer, bookkeeping
    cpu_s: float  # CPU seconds of the trainer process per step (all its threads; services excluded)
    steps: int
    precision: str = "fp32"  # fp32 | bf16 (autocast, fp32 weights)


def _model_dir(task: Any, model: str) -> str:
    """The trainer's own resolution (tiny model, folder, hub id, or a .gguf file dequantised once)."""
    from botgrpo_cli.config import ModelConfig
    from botgrpo_cli.trainer.policy import resolve_model_path

    return resolve_model_path(ModelConfig(name_or_path=model or None), task.name)


def _bf16(precision: str, model: Any) -> bool:
    """fp32 | bf16 | auto (botgrpo's start-up rule for this model on this CPU)."""
    from botgrpo_cli.models.precision import choose

    return choose({"fp32": "off", "bf16": "bfloat16"}.get(precision, "auto"), model)[0]


def measure_botgrpo(steps: int, task: str, threads: int, out_dir: Path, model: str = "", shape: Shape = Shape(),
                    precision: str = "auto") -> SideFigures:
    """botgrpo's trainer with the grpo preset (outcome advantages) at `bench step`'s settings."""
    from botgrpo_cli.bench.step import SHAPE
    from botgrpo_cli.config import load_config
    from botgrpo_cli.trainer import train
    from botgrpo_cli.trainer.policy import load_model
    from botgrpo_tasks import get_task

    path = _model_dir(get_task(task, seed=0), model)
    cfg = load_config(None, algo="grpo", sets=[*SHAPE, f"run.task={task}", f"run.steps={steps + 1}",
                                               f"run.threads={threads}", "run.seed=0",
                                               f"rollout.prompts_per_step={shape.prompts}",
                                               f"rollout.group_size={shape.group}",
                                               f"rollout.max_new_tokens={shape.new_tokens}"])
    cfg.run.out_dir, cfg.model.name_or_path = str(out_dir), path
    bf16 = _bf16(precision, load_model(path, cfg.model, trainable=False))
    cfg.model.autocast = "bfloat16" if bf16 else "off"
    ends: list[float] = []  # process CPU seconds at the end of each step (train()'s step callback)
    records = train(cfg, on_step=lambda step, metrics: ends.append(time.process_time())).metrics[1:]
    cpu = [b - a for a, b in zip(ends, ends[1:])]  # step k's CPU: from step k-1's end (warm-up left out)

    def med(key: str) -> float:
        return statistics.median(r[f"time/{key}_s"] for r in records)

    return SideFigures("botgrpo", med("step"), med("generate"), med("reward"),
                       med("step") - med("generate") - med("reward"), statistics.median(cpu), len(records),
                       "bf16" if bf16 else "fp32")


def _timed_trainer_class() -> type:
    from trl import GRPOTrainer

    class TimedGRPOTrainer(GRPOTrainer):
        """GRPOTrainer that adds up, per step, the seconds spent generating and scoring."""

        phase: dict[str, float] = {}

        def _generate(self, prompts: list) -> Any:
            from botgrpo_cli.models.precision import autocast

            t0 = time.perf_counter()
            try:
                with autocast(self.args.bf16):  # the same precision as botgrpo's rollouts
                    return super()._generate(prompts)
            finally:
                self.phase["generate"] = self.phase.get("generate", 0.0) + time.perf_counter() - t0

        def _calculate_rewards(self, *args: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return super()._calculate_rewards(*args)
            finally:
                self.phase["reward"] = self.phase.get("reward", 0.0) + time.perf_counter() - t0

    return TimedGRPOTrainer


def measure_trl(steps: int, task: str, threads: int, out_dir: Path, model: str = "", shape: Shape = Shape(),
                precision: str = "auto") -> SideFigures:
    """TRL's GRPOTrainer at the same settings, rewards from the same service (sequence scores)."""
    import torch
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
    from trl import GRPOConfig

    from botgrpo_cli.integrations.trl import reward_function
    from botgrpo_cli.trainer.rollouts import PromptStream
    from botgrpo_tasks import get_task

    torch.set_num_threads(threads)
    task_obj = get_task(task, seed=0)
    model_dir = _model_dir(task_obj, model)
    tok = AutoTokenizer.from_pretrained(model_dir)
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token  # as botgrpo's loader does
    lm = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    bf16 = _bf16(precision, lm)
    examples = PromptStream(task_obj.train_examples(), seed=0).take(shape.prompts * (steps + 1))
    data = Dataset.from_list([{"prompt": task_obj.format_prompt(ex, tok), "reference": json.dumps(ex.reference)}
                              for ex in examples])
    args = GRPOConfig(output_dir=str(out_dir), per_device_train_batch_size=shape.prompts * shape.group,
                      num_generations=shape.group, max_completion_length=shape.new_tokens, max_steps=steps + 1, learning_rate=1e-3, beta=0.0,
                      num_iterations=1, loss_type="grpo", temperature=1.0, top_p=1.0, top_k=0, use_cpu=True,
                      gradient_checkpointing=False,  # TRL's default is on; botgrpo's is off: compare like with like
                      bf16=bf16, report_to="none", save_strategy="no", logging_steps=1, seed=0,
                      shuffle_dataset=False, dataloader_num_workers=0, disable_tqdm=True)
    reward = reward_function(task_obj.service, options=task_obj.service_options, workers=2)  # as SHAPE's reward.workers
    trainer_cls = _timed_trainer_class()
    records: list[dict[str, float]] = []

    class StepClock(TrainerCallback):
        def on_step_begin(self, *_: Any, **__: Any) -> None:
            trainer_cls.phase.clear()
            self.t0, self.c0 = time.perf_counter(), time.process_time()

        def on_step_end(self, *_: Any, **__: Any) -> None:
            records.append({"step": time.perf_counter() - self.t0, "cpu": time.process_time() - self.c0,
                            **trainer_cls.phase})

    try:
        trainer = trainer_cls(lm, reward_funcs=_json_reference(reward), args=args, train_dataset=data,
                              processing_class=tok, callbacks=[StepClock()])
        trainer.train()
    finally:
        reward.close()
    timed = records[1:]

    def med(key: str) -> float:
        return statistics.median(r.get(key, 0.0) for r in timed)

    rest = statistics.median(r["step"] - r.get("generate", 0.0) - r.get("reward", 0.0) for r in timed)
    return SideFigures("trl", med("step"), med("generate"), med("reward"), rest, med("cpu"), len(timed),
                       "bf16" if bf16 else "fp32")


def _json_reference(reward: Any) -> Any:
    """The dataset stores each reference as JSON text (Arrow needs one column type); decode it."""
    def score(prompts: list, completions: list, reference: list[str], **kwargs: Any) -> list:
        return reward(prompts, completions, reference=[json.loads(r) for r in reference], **kwargs)

    score.__name__ = reward.__name__
    return score


def _checker_note(task: str) -> str:
    """The title's words on the react type checker. Both sides' processes inherit BOTGRPO_REACT_CHECKER,
    so their services run the checker it names, forced (a tsgo that cannot start fails the run);
    unset, each service picks by checker.js's rule. The client never imports a service's internals,
    so it cannot tell which one a service picked by itself. Empty for tasks react does not score."""
    from botgrpo_tasks import get_task

    if get_task(task, seed=0).service != "react":
        return ""
    chosen = os.environ.get("BOTGRPO_REACT_CHECKER")
    if chosen:
        return f", react checker {chosen} on both"
    return ", react checker by the service's own rule on both (BOTGRPO_REACT_CHECKER=tsgo|ts5 names one)"


def _side(side: str, steps: int, task: str, threads: int, out: Path, model: str, shape: Shape,
          precision: str) -> SideFigures:
    argv = [sys.executable, "-m", "botgrpo_cli.bench.peer_trl", side, str(steps), task, str(threads), str(out),
            model, str(shape), precision]
    proc = subprocess.run(argv, capture_output=True, text=True)  # the environment (the checker) is inherited
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise UserError(f"bench step --vs trl: the {side} run failed: {' | '.join(tail)}")
    return SideFigures(**json.loads(proc.stdout.strip().splitlines()[-1]))


def _pooled(runs: list[SideFigures]) -> SideFigures:
    """Median of each figure over rounds; `steps` is the total number of timed steps."""
    fields = ("step_s", "generate_s", "reward_s", "rest_s", "cpu_s")
    return SideFigures(runs[0].side, *(statistics.median(getattr(r, f) for r in runs) for f in fields),
                       sum(r.steps for r in runs), runs[0].precision)


def run(console: Any, steps: int = 5, task: str = "react_synth", threads: int = 2, rounds: int = 2,
        model: str | None = None, shape: Shape = Shape(), precision: str = "auto") -> list[SideFigures]:
    """Measure both sides in fresh subprocesses, alternating order over `rounds` so that load drift
    on a shared machine hits both; print medians, the split and the ratios; return [botgrpo, trl]."""
    from rich.table import Table

    if steps < 1 or rounds < 1:
        raise UserError("--steps and --rounds must be at least 1")
    runs: dict[str, list[SideFigures]] = {"botgrpo": [], "trl": []}
    checked = _checker_note(task)
    with tempfile.TemporaryDirectory(prefix="botgrpo-bench-peer-") as tmp:
        for k in range(rounds):
            for side in ("botgrpo", "trl") if k % 2 == 0 else ("trl", "botgrpo"):
                console.print(f"[bold]bench step --vs trl:[/] round {k + 1}/{rounds}, {side}, {steps} timed steps")
                runs[side].append(_side(side, steps, task, threads, Path(tmp) / f"{side}-{k}", model or "", shape,
                                        precision))
    ours, trl = _pooled(runs["botgrpo"]), _pooled(runs["trl"])
    table = Table(title=f"seconds per training step, {task}, {model or 'tiny model'}, {shape.prompts} prompts x "
                        f"{shape.group} completions x {shape.new_tokens} new tokens, beta 0, {threads} threads, "
                        f"{ours.precision} on both{checked} (medians, {rounds} rounds x {steps} steps; load average "
                        f"{os.getloadavg()[0]:.1f} at the end)")
    for col in ("trainer", "step s", "generate s", "reward s", "rest s", "CPU s", "step / trl", "CPU / trl"):
        table.add_column(col, justify="left" if col == "trainer" else "right")
    for r in (ours, trl):
        table.add_row(r.side, f"{r.step_s:.3f}", f"{r.generate_s:.3f}", f"{r.reward_s:.3f}", f"{r.rest_s:.3f}",
                      f"{r.cpu_s:.3f}", f"{r.step_s / trl.step_s:.3f}", f"{r.cpu_s / trl.cpu_s:.3f}")
    console.print(table)
    verdict = "met" if ours.step_s <= TARGET * trl.step_s else "NOT met"
    console.print(f"botgrpo / trl step time = {ours.step_s / trl.step_s:.3f} (target <= {TARGET}: {verdict})")
    return [ours, trl]


if __name__ == "__main__":  # one side per process: prints one JSON line
    side, n, t, th, o, m, sh, pr = sys.argv[1:9]
    measure = {"botgrpo": measure_botgrpo, "trl": measure_trl}[side]
    print(json.dumps(asdict(measure(int(n), t, int(th), Path(o), m, Shape.parse(sh), pr))))
