#!/usr/bin/env bash
# Issue 46's math setting (research/preregistration/react_synth_compile.md, "The math setting"),
# writing under research/results/arith46/.
#   arith46.sh pilot          the lr pilot on seed 100 (grid 1e-4, 2e-4, 5e-4), grpo and bot_grpo, 30 steps
#   arith46.sh pilot-record   the plan's lr rule ("rises": final pass@1 >= base + 0.03) -> arith46/pilot/choice.json
#   arith46.sh compare        seeds 0-9 at the chosen lrs, 30 steps (refuses when grpo did not improve); rerun to continue
#   arith46.sh summaries      the same runs summarised as pass@8, then the results page
set -euo pipefail
cd "$(dirname "$0")/../.."
export BOTGRPO_CACHE=${BOTGRPO_CACHE:-$PWD/.cache/botgrpo}
BOT=.venv/bin/botgrpo
PY=.venv/bin/python
OUT=research/results/arith46
COMMON=(--task arith_synth --algos grpo,bot_grpo --threads 1 --steps 30 --eval-every 10 --eval-prompts 256
        --eval-samples 8 --parallel 2)

case "${1:-}" in
pilot)
  for lr in 1e-4 2e-4 5e-4; do
    $BOT bench convergence "${COMMON[@]}" --metric pass@1 --seeds 1 --seed-start 100 --target 0.3 \
      --set optim.lr=$lr --out $OUT/pilot/lr$lr --work $OUT/pilot/lr$lr/runs
  done ;;
pilot-record)
  $PY research/scripts/react46_records.py choose $OUT/pilot $OUT/pilot/choice.json 0.03 ;;
compare|summaries)
  read -r LR_G LR_B _ < <($PY research/scripts/react46_records.py read-choice $OUT/pilot/choice.json)
  metric=pass@1; [ "$1" = summaries ] && metric=pass@8
  $BOT bench convergence "${COMMON[@]}" --metric $metric --seeds 10 --seed-start 0 --target 0.3 \
    --algo-set grpo:optim.lr=$LR_G --algo-set bot_grpo:optim.lr=$LR_B \
    --out $OUT/compare_$metric --work $OUT/compare/runs
  if [ "$1" = summaries ]; then .venv/bin/python research/pages/make_pages.py; fi ;;
*)
  sed -n 2,8p "$0"; exit 2 ;;
esac
