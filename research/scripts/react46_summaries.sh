#!/usr/bin/env bash
# After `react46.sh compare` has finished every pair: the same runs summarised for the plan's
# secondary metrics (no run is repeated: the work directory's finished pairs are read), then the page.
# (A separate script: react46.sh may be running while this one is edited.)
set -euo pipefail
cd "$(dirname "$0")/../.."
export BOTGRPO_CACHE=${BOTGRPO_CACHE:-$PWD/.cache/botgrpo}
OUT=research/results/react46
read -r LR_G LR_B STEPS < <(.venv/bin/python research/scripts/react46_records.py read-choice $OUT/pilot/choice.json)
for metric in all_ok spec_ok; do
  .venv/bin/botgrpo bench convergence --task react_synth --algos grpo,bot_grpo --metric $metric --threads 1 \
    --seeds 10 --seed-start 0 --steps "$STEPS" --eval-every 5 --eval-prompts 256 --eval-samples 2 \
    --target 0.5,0.8,0.95 --parallel 2 --algo-set grpo:optim.lr=$LR_G --algo-set bot_grpo:optim.lr=$LR_B \
    --out $OUT/compare_$metric --work $OUT/compare/runs
done
.venv/bin/python research/pages/make_pages.py
