#!/usr/bin/env bash
# Issue 46's runs (research/preregistration/react_synth_compile.md), writing under research/results/react46/.
#   react46.sh determinism    same 4-step run: twice at once, alone, with two threads -> react_compile/determinism.json
#   react46.sh pilot          the lr pilot on seed 100 (grid 1e-3, 3e-3, 1e-2), grpo and bot_grpo
#   react46.sh pilot-record   the plan's lr rule applied to the pilot's records -> react46/pilot/choice.json
#   react46.sh compare        seeds 0-9 at the chosen lrs and length (reads choice.json); rerun to continue
#   react46.sh explore-pilot  the exploratory presets' lr pilot on seed 100 (the same grid and rule)
#   react46.sh explore-record the rule applied to it -> react46/explore_pilot/choice.json
#   react46.sh explore        the exploratory arms on seeds 0-9 (seeds 0-4 of every arm first), and bot_grpo
#                             with noisy spans at bot_grpo's lr; rerun to continue
# Finished pairs are kept: rerunning a mode continues it (its records are committed, checkpoints are not).
set -euo pipefail
cd "$(dirname "$0")/../.."
export BOTGRPO_CACHE=${BOTGRPO_CACHE:-$PWD/.cache/botgrpo}
BOT=.venv/bin/botgrpo
PY=.venv/bin/python
OUT=research/results/react46
COMMON=(--task react_synth --algos grpo,bot_grpo --metric compile --threads 1)
EXPLORE=dapo,gspo,pure,dr_grpo,bot_grpo_outcome
NOISE='reward.span_noise={drop: 0.3, flip: 0.1, jitter: 3}'

case "${1:-}" in
determinism)
  D=$(mktemp -d)
  one() { OMP_NUM_THREADS=$2 $BOT train --set run.task=react_synth --set run.seed=100 --set run.steps=4 \
      --set optim.lr=3e-3 --set run.threads=$2 --set run.save_every=0 --set run.eval_every=0 \
      --set log.samples_every=0 --set log.tensorboard=false --set run.out_dir="$D/$1" > "$D/$1.log" 2>&1; }
  l0=$(cut -d' ' -f1 /proc/loadavg)
  one together_a 1 & one together_b 1 & wait
  l1=$(cut -d' ' -f1 /proc/loadavg)
  one alone 1
  one two_threads 2
  l2=$(cut -d' ' -f1 /proc/loadavg)
  $PY research/scripts/react46_records.py determinism "$D" research/results/react_compile/determinism.json "$l0 $l1 $l2"
  rm -rf "$D" ;;
pilot)
  for lr in 1e-3 3e-3 1e-2; do
    $BOT bench convergence "${COMMON[@]}" --seeds 1 --seed-start 100 --steps 60 --eval-every 10 \
      --eval-prompts 128 --eval-samples 2 --target 0.5,0.8 --parallel 2 --set optim.lr=$lr \
      --out $OUT/pilot/lr$lr --work $OUT/pilot/lr$lr/runs
  done ;;
pilot-record)
  $PY research/scripts/react46_records.py choose $OUT/pilot $OUT/pilot/choice.json ;;
compare)
  read -r LR_G LR_B STEPS < <($PY research/scripts/react46_records.py read-choice $OUT/pilot/choice.json)
  $BOT bench convergence "${COMMON[@]}" --seeds 10 --seed-start 0 --steps "$STEPS" --eval-every 5 \
    --eval-prompts 256 --eval-samples 2 --target 0.5,0.8,0.95 --parallel 2 \
    --algo-set grpo:optim.lr=$LR_G --algo-set bot_grpo:optim.lr=$LR_B \
    --out $OUT/compare --work $OUT/compare/runs ;;
explore-pilot)
  for lr in 1e-3 3e-3 1e-2; do
    $BOT bench convergence "${COMMON[@]/grpo,bot_grpo/$EXPLORE}" --seeds 1 --seed-start 100 --steps 60 \
      --eval-every 10 --eval-prompts 128 --eval-samples 2 --target 0.5,0.8 --parallel 2 --set optim.lr=$lr \
      --out $OUT/explore_pilot/lr$lr --work $OUT/explore_pilot/lr$lr/runs
  done ;;
explore-record)
  $PY research/scripts/react46_records.py choose $OUT/explore_pilot $OUT/explore_pilot/choice.json ;;
explore)
  read -r _ LR_B STEPS < <($PY research/scripts/react46_records.py read-choice $OUT/pilot/choice.json)
  mapfile -t SETS < <($PY research/scripts/react46_records.py read-sets $OUT/explore_pilot/choice.json)
  for n in 5 10; do
    $BOT bench convergence "${COMMON[@]/grpo,bot_grpo/$EXPLORE}" --seeds $n --seed-start 0 --steps "$STEPS" \
      --eval-every 5 --eval-prompts 256 --eval-samples 2 --target 0.5,0.8,0.95 --parallel 2 "${SETS[@]}" \
      --out $OUT/explore --work $OUT/explore/runs
    $BOT bench convergence "${COMMON[@]/grpo,bot_grpo/bot_grpo}" --seeds $n --seed-start 0 --steps "$STEPS" \
      --eval-every 5 --eval-prompts 256 --eval-samples 2 --target 0.5,0.8,0.95 --parallel 2 \
      --set "$NOISE" --set optim.lr=$LR_B --out $OUT/noisy --work $OUT/noisy/runs
  done ;;
*)
  sed -n 2,11p "$0"; exit 2 ;;
esac
