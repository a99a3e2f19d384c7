"""`botgrpo train`: RL training with BoT-GRPO or any baseline preset."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from botgrpo_cli.console import console, out

# `botgrpo train` with no arguments: the demo (task react_synth, bot_grpo, a few minutes on 2 cores).
DEMO_SETS = ["run.task=react_synth", "run.threads=2", "run.steps=30", "run.eval_prompts=64", "reward.workers=2",
             "run.save_every=0", "log.samples_every=5"]


def register(app: typer.Typer) -> None:
    @app.command()
    def train(
        config: Annotated[Optional[Path], typer.Argument(help="YAML config (sections model, rollout, reward, "
                                                              "algo, optim, run, log); defaults when omitted")] = None,
        algo: Annotated[Optional[str], typer.Option("--algo", help="preset: grpo, bot_grpo, dr_grpo, dapo, "
                                                                   "gspo, pure")] = None,
        sets: Annotated[Optional[list[str]], typer.Option("--set", help="override SECTION.KEY=VALUE "
                                                                        "(repeatable), e.g. optim.lr=3e-4")] = None,
        resume: Annotated[bool, typer.Option("--resume", help="continue the run in --out from its "
                                                              "latest checkpoint")] = False,
        out_dir: Annotated[Optional[Path], typer.Option("--out", help="run directory")] = None,
        steps: Annotated[Optional[int], typer.Option("--steps", help="training steps (run.steps)")] = None,
        list_options: Annotated[bool, typer.Option("--list-options", help="print every config option with "
                                                                          "its default and meaning, then exit")] = False,
    ) -> None:
        """Train a model with BoT-GRPO or a baseline (GRPO, Dr. GRPO, DAPO, GSPO, PURE).

        With no arguments: bootstrap the tiny react_synth model (cached), train bot_grpo for a few
        minutes on 2 CPU cores and print the held-out success rate before and after.
        """
        from botgrpo_cli.config import describe, load_config, validate
        from botgrpo_cli.trainer import train as run_training

        if list_options:
            out.print(describe(), markup=False, highlight=False, soft_wrap=True)
            return
        demo = config is None and algo is None and not sets and not resume and out_dir is None and steps is None
        cfg = load_config(config, sets=DEMO_SETS if demo else list(sets or []), algo=algo)
        if out_dir is not None:
            cfg.run.out_dir = str(out_dir)
        if steps is not None:
            cfg.run.steps = steps
        validate(cfg)
        if demo:
            console.print("[bold]demo:[/] bot_grpo on react_synth with the bootstrapped tiny model "
                          f"({cfg.run.steps} steps, 2 CPU threads)")
        result = run_training(cfg, resume=resume, eval_around=demo)
        _summary(result)


def _summary(result) -> None:
    last = result.metrics[-1] if result.metrics else {}
    if result.eval_before is not None and result.eval_after is not None:
        n = int(result.eval_after["eval/prompts"])
        out.print(f"success rate on {n} held-out prompts (sampled): "
                  f"before {result.eval_before['eval/success']:.3f} -> after {result.eval_after['eval/success']:.3f}")
    if last:
        out.print(f"final step {last['step']}: reward {last.get('reward/mean')}, success {last.get('success')}")
    out.print(f"run directory: {result.run_dir}")
    out.print(f"metrics:       {result.run_dir / 'metrics.jsonl'}")
    out.print(f"samples page:  {result.samples}")
    if result.curves is not None:
        out.print(f"curves:        {result.curves}")
