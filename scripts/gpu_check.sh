#!/usr/bin/env bash
# GPU check: build a venv with vLLM, bootstrap the tiny models, run tests/gpu, print a summary.
#
#   bash scripts/gpu_check.sh                 # needs a CUDA GPU and PyPI (or WHEELS=dir, see below)
#   WHEELS=/path/to/wheels bash scripts/gpu_check.sh   # offline: install from a wheel directory
#
# The venv lives in .cache/venv-gpu (kept between runs; delete it to rebuild). vLLM 0.33.0 pins
# torch==2.14.0 and transformers<5.21 (botgrpo accepts 5.20-5.23), so the venv takes torch and
# transformers from vLLM and installs botgrpo itself with --no-deps plus the rest of its
# dependencies, keeping vLLM's choice fixed. A few minutes on one GPU once the venv exists.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=.cache/venv-gpu
PY="$VENV/bin/python"
export BOTGRPO_CACHE="${BOTGRPO_CACHE:-$PWD/.cache/botgrpo}"
LOG=.cache/gpu_check.log

if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "gpu_check: no CUDA GPU visible (nvidia-smi -L failed); run this on a GPU machine" >&2
  exit 1
fi
nvidia-smi -L

pip_install() {
  if [ -n "${WHEELS:-}" ]; then
    "$PY" -m pip install -q --no-index --find-links "$WHEELS" "$@"
  else
    "$PY" -m pip install -q "$@"
  fi
}

if [ ! -x "$PY" ] || ! "$PY" -c "import vllm, botgrpo_cli" 2>/dev/null; then
  echo "gpu_check: building $VENV (vllm==0.33.0 and its CUDA torch: several GB)"
  python3 -m venv "$VENV"
  pip_install --upgrade pip
  pip_install vllm==0.33.0
  # botgrpo's own dependencies, minus the two vLLM decides (torch, transformers).
  mapfile -t deps < <("$PY" - <<'EOF'
import tomllib
project = tomllib.load(open("pyproject.toml", "rb"))["project"]
skip = ("torch", "transformers")
for dep in project["dependencies"] + project["optional-dependencies"]["dev"]:
    if not dep.split("=")[0].split("<")[0].split(">")[0].strip() in skip:
        print(dep)
EOF
  )
  pip_install "${deps[@]}"
  pip_install --no-deps -e .
fi
"$PY" -c "import torch, transformers, vllm; print(f'torch {torch.__version__}, transformers {transformers.__version__}, vllm {vllm.__version__}, cuda {torch.cuda.is_available()}')"

echo "gpu_check: bootstrapping the tiny models (cached in $BOTGRPO_CACHE)"
"$VENV/bin/botgrpo" bootstrap --task react_synth >/dev/null
"$VENV/bin/botgrpo" bootstrap --task arith_synth >/dev/null

echo "gpu_check: running tests/gpu"
start=$(date +%s)
set +e
"$PY" -m pytest tests/gpu -m gpu -q -rA --durations=10 -p no:cacheprovider 2>&1 | tee "$LOG"
status=${PIPESTATUS[0]}
set -e
echo "gpu_check: asynchronous rollouts, seconds per step at rollout.max_staleness 0, 1, 2 (vLLM in process)"
"$VENV/bin/botgrpo" bench --json .cache/gpu_check_async.json step --async 0,1,2 --algos grpo --task arith_synth \
  --steps 5 --repeats 2 --set rollout.engine=vllm --set rollout.vllm_gpu_memory_utilization=0.15 \
  2>&1 | tee -a "$LOG" || status=1
echo
echo "=== gpu_check summary ($(( $(date +%s) - start )) s, log: $LOG) ==="
grep -E "^(PASSED|FAILED|ERROR|SKIPPED)" "$LOG" || true
tail -n 1 "$LOG"
if grep -q "skipped" "$LOG" && ! grep -q "passed" "$LOG"; then
  echo "gpu_check: every GPU test was skipped: CUDA or vLLM is not usable from $VENV" >&2
  exit 1
fi
exit "$status"
