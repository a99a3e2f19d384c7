#!/usr/bin/env bash
# The registered repair comparison (research/preregistration/react_synth_repair_turns.md, as amended on
# 2026-12-06: `revise: true` added to the task options, work directory under research/results so that
# finished pairs are committed and carried over). Rerun to continue.
set -euo pipefail
cd "$(dirname "$0")/../.."
export BOTGRPO_CACHE=${BOTGRPO_CACHE:-$PWD/.cache/botgrpo}
.venv/bin/botgrpo bench convergence --task react_synth --algos grpo,bot_grpo --seeds 5 --steps 30 --eval-every 10 \
  --eval-prompts 128 --eval-samples 2 --metric all_ok --target 0.5,0.8 \
  --set "run.task_options={sites: 2, revise: true}" --set rollout.max_turns=2 --set optim.lr=1e-3 \
  --threads 1 --out research/results/react_repair --work research/results/react_repair/runs
