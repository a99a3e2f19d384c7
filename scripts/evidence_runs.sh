#!/usr/bin/env bash
# The #16 result set (docs/convergence.md): every setting here was fixed before any run was seen.
# Each invocation takes the shared bench lock on its own, so other benchmarks can interleave.
# Usage: scripts/evidence_runs.sh all | lr | rest | react | arith | sites  (finished pairs are kept and not re-run)
set -euo pipefail
cd "$(dirname "$0")/.."
B=".venv/bin/botgrpo bench convergence"
R=docs/results/convergence16
K2="run.task_options={sites: 2}"
COMMON=(--steps 30 --eval-every 10 --eval-prompts 64 --eval-samples 2 --parallel 2 --threads 1)
ALL=grpo,bot_grpo,bot_grpo_outcome,dr_grpo,dapo,gspo,pure
run() { echo "== $(date -u +%H:%M:%S) load: $(cut -d' ' -f1-3 /proc/loadavg)"; flock /tmp/botgrpo-bench.lock $B "$@"; }
# The lr rule, fixed before the sweep ran: per swept method the lr with the higher final all_ok on
# seed 100 (a tie keeps the lower lr); the presets not swept take grpo's.
choose_lr() {
  .venv/bin/python - "$R/lr_seed100" <<'PY'
import json, sys
from pathlib import Path
root = Path(sys.argv[1])
lrs = sorted((float(p.name[3:]), p) for p in root.glob("lr-*"))
finals = {lr: {a: s["final"]["median"] for a, s in json.loads((p / "convergence.json").read_text())["algorithms"].items()}
          for lr, p in lrs}
best = {a: max(finals, key=lambda lr: (finals[lr][a], -lr)) for a in next(iter(finals.values()))}
for a in ("dr_grpo", "dapo", "gspo", "pure"):
    best.setdefault(a, best["grpo"])
print(" ".join(f"--algo-set {a}:optim.lr={lr:g}" for a, lr in best.items()))
PY
}
case "$1" in
  lr)  # learning rate per method on seed 100 (never reported as a result), react_synth sites=2
    for lr in 1e-3 3e-3; do
      run --task react_synth --algos grpo,bot_grpo,bot_grpo_outcome --seeds 1 --seed-start 100 "${COMMON[@]}" \
          --target 0.5,0.8 --set "$K2" --set optim.lr=$lr --out $R/lr_seed100/lr-$lr --work runs/cv16/lr-$lr
    done ;;
  react)  # (a) all presets, 3 seeds; LR_ARGS holds the --algo-set lr choices from the lr step
    run --task react_synth --algos $ALL --seeds 3 "${COMMON[@]}" --target 0.5,0.8,0.95 --set "$K2" \
        ${LR_ARGS:-} --out $R/react_synth_k2 --work runs/cv16/react-k2 ;;
  arith)  # (c) arith_synth pass@1 and pass@8, lr 1e-3 for all (not swept)
    for m in pass@1 pass@8; do
      run --task arith_synth --algos grpo,bot_grpo,bot_grpo_outcome --seeds 3 --steps 30 --eval-every 10 \
          --eval-prompts 64 --eval-samples 8 --parallel 2 --threads 1 --metric $m --target 0.5,0.8 \
          --out $R/arith_synth_$m --work runs/cv16/arith
    done ;;
  all)  # lr, then (a), (c), (b) in that order, each taking the lock on its own
    "$0" lr; "$0" rest ;;
  rest)  # (a), (c), (b) with the lr choice
    export LR_ARGS="$(choose_lr)"; echo "lr choice: $LR_ARGS"
    "$0" react; "$0" arith; "$0" sites ;;
  sites)  # (b) k = 1 and 4 (k = 2 is the react step), grpo vs the two BoT-GRPO variants, 2 seeds
    for k in 1 4; do
      run --task react_synth --algos grpo,bot_grpo,bot_grpo_outcome --seeds 2 "${COMMON[@]}" --target 0.5,0.8 \
          --set "run.task_options={sites: $k}" $(echo "${LR_ARGS:-}" | grep -oE -- "--algo-set (grpo|bot_grpo|bot_grpo_outcome):[^ ]+" | tr '\n' ' ') --out $R/react_synth_k$k --work runs/cv16/react-k$k
    done ;;
esac
