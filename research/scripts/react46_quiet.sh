#!/usr/bin/env bash
# The plan's wall-clock endpoint (research/preregistration/react_synth_compile.md): both arms, seeds 0-9,
# one run at a time, on a quiet machine only. Refuses to start above load 1.5; writes the load before
# (quiet/load_start.txt) and bench convergence records it at the end (provenance). The runs' steps must
# reproduce the loaded comparison's (react46/compare) exactly: compare their evals.jsonl after.
set -euo pipefail
cd "$(dirname "$0")/../.."
export BOTGRPO_CACHE=${BOTGRPO_CACHE:-$PWD/.cache/botgrpo}
OUT=research/results/react46/quiet
load=$(cut -d' ' -f1 /proc/loadavg)
if awk -v l="$load" 'BEGIN { exit !(l >= 1.5) }'; then
  echo "load average $load: not a quiet machine (the plan asks for < 1.5); not started" >&2; exit 1
fi
mkdir -p $OUT && echo "$(date -u +%FT%TZ) $(cat /proc/loadavg)" >> $OUT/load_start.txt
read -r LR_G LR_B STEPS < <(.venv/bin/python research/scripts/react46_records.py read-choice research/results/react46/pilot/choice.json)
.venv/bin/botgrpo bench convergence --task react_synth --algos grpo,bot_grpo --metric compile --threads 1 \
  --seeds 10 --seed-start 0 --steps "$STEPS" --eval-every 5 --eval-prompts 256 --eval-samples 2 \
  --target 0.5,0.8,0.95 --parallel 1 --algo-set grpo:optim.lr=$LR_G --algo-set bot_grpo:optim.lr=$LR_B \
  --out $OUT --work $OUT/runs
