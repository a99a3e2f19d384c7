#!/usr/bin/env bash
# The speed figures the docs quote, each written by its command as a record (`botgrpo bench --json`)
# under research/results/bench/, one benchmark at a time under the shared bench lock; then
# `python research/pages/make_pages.py` turns the records into research/benchmark-figures.md.
#
#   research/scripts/bench_records.sh all | react | react_step | step | stream | algos   # from a clean checkout at a commit
#
# Run it on a quiet machine (the records keep the load average before and after each command).
set -euo pipefail
cd "$(dirname "$0")/../.."
B=".venv/bin/botgrpo bench"
OUT=research/results/bench
mkdir -p "$OUT"
if [ -n "$(git status --porcelain --untracked-files=no -- . ':(exclude)docs' ':(exclude)research')" ]; then
  echo "bench_records: the code has uncommitted changes; commit first so each record names the code" >&2
  exit 1
fi
rec() {  # $1 record name (a run already recorded gets _run2, _run3 ...), then the bench command
  local name=$1 k=2; shift
  if [ -e "$OUT/$name.json" ]; then while [ -e "$OUT/${name}_run$k.json" ]; do k=$((k + 1)); done; name=${name}_run$k; fi
  echo "== $(date -u +%H:%M:%S) $name (load $(cut -d' ' -f1-3 /proc/loadavg))"
  flock /tmp/botgrpo-bench.lock $B --json "$OUT/$name.json" "$@"
}
react() {
  rec react_checkers_64 rewards --service react --n 64
  rec step_vs_trl_react_synth step --vs trl --task react_synth --steps 3 --repeats 3
}
step() {
  rec step_vs_trl_arith_synth step --vs trl --task arith_synth --steps 3 --repeats 3
  rec step_grpo_bot_grpo_arith_synth step --algos grpo,bot_grpo --task arith_synth --steps 3 --repeats 4
  # frozen weights (lr 1e-30): both presets sample the same completions, so only their own cost differs
  rec step_grpo_bot_grpo_arith_synth_frozen step --algos grpo,bot_grpo --task arith_synth --steps 3 --repeats 4 \
      --set optim.lr=1e-30
}
stream() {  # reward.stream on the CPU: rows scored as each ends vs once the batch is generated
  rec step_react_synth_stream_always step --algos grpo --task react_synth --steps 3 --repeats 3 --set reward.stream=always
  rec step_react_synth_stream_after step --algos grpo --task react_synth --steps 3 --repeats 3 --set reward.stream=after
}
algos() {
  rec algos_B1024_T4096_1thread algos --batch 1024 --groups 128 --seq-len 4096 --threads 1 --repeats 9
}
case "${1:-all}" in
  react) react ;;
  stream) stream ;;
  react_step) rec step_vs_trl_react_synth step --vs trl --task react_synth --steps 3 --repeats 3 ;;
  step) step ;;
  algos) algos ;;
  all) algos; step; stream; react ;;
  *) echo "usage: $0 all | react | react_step | step | stream | algos" >&2; exit 2 ;;
esac
.venv/bin/python research/pages/make_pages.py
