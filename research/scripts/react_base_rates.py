"""Base rates of a react_synth warm start on the held-out prompts, as `bench convergence` evaluates
step 0 (same prompts, samples, sampling seed, temperature and length limit), written to a JSON file
with the commit and load it was measured at.

    BOTGRPO_CACHE=.cache/botgrpo .venv/bin/python research/scripts/react_base_rates.py \
        research/results/react_compile/base_rates.json [--task-option KEY=VALUE ...]
"""

from __future__ import annotations

import argparse
import json

import yaml
from pathlib import Path

from botgrpo_cli.bench.convergence import EVAL_SEED, Settings, evaluate_model
from botgrpo_cli.bench.provenance import provenance
from botgrpo_cli.bootstrap import bootstrap
from botgrpo_cli.reward_client import RewardPool
from botgrpo_tasks import get_task


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out", type=Path)
    ap.add_argument("--task-option", action="append", default=[], help="KEY=VALUE, as bootstrap --task-option")
    ap.add_argument("--prompts", type=int, default=256)
    ap.add_argument("--samples", type=int, default=2)
    args = ap.parse_args()
    options = {k: yaml.safe_load(v) for k, v in (o.split("=", 1) for o in args.task_option)}
    model = bootstrap(get_task("react_synth", **options))
    sets = [f"run.task_options={json.dumps(options)}"] if options else []
    settings = Settings(task="react_synth", algos=["grpo"], seeds=[0], steps=1, eval_every=1, targets=[0.8],
                        metric="compile", eval_prompts=args.prompts, eval_samples=args.samples, sets=sets)
    spec = settings.eval_spec()
    with RewardPool(get_task("react_synth").service) as pool:
        record = evaluate_model(model, spec, pool, threads=1)
    out = {"what": "held-out base rates of the react_synth warm start (step 0 of bench convergence)",
           "task_options": options, "model": Path(model).name, "eval_seed": EVAL_SEED,
           "prompts": args.prompts, "samples": args.samples, "means": record["means"],
           "failed": record["failed"], "seconds": record["seconds"], "provenance": provenance()}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps({k: out[k] for k in ("model", "means")}, indent=1))


if __name__ == "__main__":
    main()
