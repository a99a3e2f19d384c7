"""`botgrpo train`: RL training with BoT-GRPO or any baseline preset."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from botgrpo_cli.cli.options import CHOICES, listing_choices
from botgrpo_cli.console import console, out
from botgrpo_cli.errors import UserError

# `botgrpo train` with no arguments: the demo. Chosen by measurement (research/measurements.md): on arith_synth
# with optim.lr 2e-4 the held-out success climbs at every evaluation (react_synth's, and arith_synth's
# at the tiny model's default 1e-3, peak early and then fall), in about 3 minutes on 2 cores.
DEMO_TASK = "arith_synth"
DEMO_SETS = [f"run.task={DEMO_TASK}", "run.threads=2", "run.steps=30", "run.eval_every=15", "run.eval_prompts=128",
             "optim.lr=2e-4", "reward.workers=2", "run.save_every=0", "log.samples_every=5"]


def register(app: typer.Typer) -> None:
    @app.command(cls=listing_choices(algo="botgrpo_cli.algos:PRESETS"))
    def train(
        config: Annotated[Optional[Path], typer.Argument(help="YAML config (sections model, rollout, reward, "
                                                              "algo, optim, run, log); defaults when omitted")] = None,
        algo: Annotated[Optional[str], typer.Option("--algo", help=f"preset: {CHOICES}")] = None,
        sets: Annotated[Optional[list[str]], typer.Option("--set", help="override SECTION.KEY=VALUE "
                                                                        "(repeatable), e.g. optim.lr=3e-4")] = None,
        resume: Annotated[bool, typer.Option("--resume", help="continue the run in --out from its "
                                                              "latest checkpoint")] = False,
        out_dir: Annotated[Optional[Path], typer.Option("--out", help="run directory")] = None,
        steps: Annotated[Optional[int], typer.Option("--steps", help="training steps (run.steps)")] = None,
        list_options: Annotated[bool, typer.Option("--list-options", help="print every config option with "
                                                                          "its default and meaning, then exit")] = False,
        num_processes: Annotated[int, typer.Option("--num-processes", min=1, help="training processes on this "
                                                   "machine (gloo on CPU, one GPU each); they share each step's "
                                                   "prompts")] = 1,
        check: Annotated[bool, typer.Option("--check", help="CI smoke run: exit 1 with one line when a loss or "
                                                            "gradient is not finite, every completion of a step is "
                                                            "masked, every group is flat on every step, or no "
                                                            "parameter moved (run.fail_on = all four)")] = False,
    ) -> None:
        """Train a model with BoT-GRPO or a baseline (GRPO, Dr. GRPO, DAPO, GSPO, PURE).

        With no arguments (the demo): bootstrap the tiny arith_synth model (cached), train bot_grpo for
        a few minutes on 2 CPU cores, evaluating held-out prompts along the way, and print the held-out
        success before and after (curves.png draws it beside the training batch's).
        """
        from botgrpo_cli.config import describe
        from botgrpo_cli.trainer import train as run_training

        if list_options:
            out.print(describe(), markup=False, highlight=False, soft_wrap=True)
            return
        from botgrpo_cli.trainer.checks import CHECKS

        demo = (config is None and algo is None and not sets and not resume and out_dir is None and steps is None
                and not check)
        given = DEMO_SETS if demo else list(sets or [])
        if check:  # --set run.fail_on=[...] given too: that list wins
            given = [f"run.fail_on=[{', '.join(CHECKS)}]", *given]
        cfg = _config(config, given, algo, out_dir, steps, resume)
        if num_processes > 1 and int(os.environ.get("WORLD_SIZE", "1")) == 1:  # not yet inside a launcher
            _relaunch(num_processes, cfg.rollout.prompts_per_step)
            return
        if demo:
            console.print(f"[bold]demo:[/] bot_grpo on {DEMO_TASK} with the bootstrapped tiny model "
                          f"({cfg.run.steps} steps, 2 CPU threads)")
        result = run_training(cfg, resume=resume, eval_around=demo)
        if int(os.environ.get("RANK", "0")) == 0:
            _summary(result)


def _config(path: Optional[Path], sets: list[str], algo: Optional[str], out_dir: Optional[Path],
            steps: Optional[int], resume: bool):
    """The run's config: the command line's, or with --resume the run's saved one (see config_resume)."""
    from botgrpo_cli.config import explicit_values, from_values
    from botgrpo_cli.config_resume import resume_config

    given = explicit_values(path, sets, algo)
    if out_dir is not None:
        given.setdefault("run", {})["out_dir"] = str(out_dir)
    if steps is not None:
        given.setdefault("run", {})["steps"] = steps
    run_dir = given.get("run", {}).get("out_dir")
    if resume and run_dir is not None:
        return resume_config(Path(run_dir), given)
    return from_values(given)


def _relaunch(n: int, prompts_per_step: int) -> None:
    """Run this same command in n processes; fail if any of them failed."""
    from botgrpo_cli.trainer.distributed import launch

    if prompts_per_step % n:
        raise UserError(f"rollout.prompts_per_step={prompts_per_step} must be a multiple of --num-processes {n}: "
                        "each process takes an equal share of whole groups")
    args, skip = [], False  # this command's arguments without --num-processes
    for a in sys.argv[1:]:
        if skip or a.startswith("--num-processes="):
            skip = False
            continue
        skip = a == "--num-processes"
        if not skip:
            args.append(a)
    console.print(f"starting {n} training processes")
    code = launch(n, args)
    if code != 0:
        raise UserError(f"the {n}-process run failed (exit code {code}); the failing process's message is above")


def _summary(result) -> None:
    last = result.metrics[-1] if result.metrics else {}
    if result.eval_before is not None and result.eval_after is not None:
        before, after = result.eval_before, result.eval_after
        success = (before.get("eval/success"), after.get("eval/success"))  # absent: the reward has no success rule
        score = (f", mean score {_figure(before.get('eval/score'))} -> {_figure(after.get('eval/score'))}"
                 if (before.get("eval/score"), after.get("eval/score")) != success
                 else "")  # a pass/fail task's mean score is its success rate: said once
        out.print(f"on {int(after['eval/prompts'])} held-out prompts (sampled), before -> after training: "
                  f"success rate {_figure(success[0])} -> {_figure(success[1])}{score}")
    elif last:  # the batch's figures are a few samples of new prompts: noisy, so not beside a held-out figure
        out.print(f"last training batch (step {last['step']}): reward {_figure(last.get('reward/mean'))}, "
                  f"success {_figure(last.get('success'))}")
    where = [("run directory", result.run_dir), ("metrics", result.run_dir / "metrics.jsonl"),
             ("samples page", result.samples), ("curves", result.curves)]
    for label, path in where:
        if path is not None:  # paths stay on one line so they can be copied (and grepped)
            out.print(f"{label + ':':<14} {path}", soft_wrap=True)


def _figure(value) -> str:
    return "n/a" if value is None else f"{value:.3f}"
