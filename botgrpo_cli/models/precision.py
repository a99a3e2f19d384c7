"""bf16 autocast on CPUs that compute bf16 natively (AMX or AVX512-BF16), fp32 weights and optimizer state.

Measured on this project's CPU (AMD EPYC with AVX512-BF16, 1 thread; docs/training.md, "Rollouts and precision on CPU"): on
SmolLM2-135M autocast made generation ~1.5-2x and forward+backward ~1.6-3x faster, with a mean
|log-prob difference| against fp32 of 0.026 nats per token; on the 0.1M-parameter tiny models it made
generation ~1.4x slower (casts cost more than the tiny matmuls save). So `auto` turns it on from
AUTO_MIN_PARAMS parameters up, on a CPU that has the instructions, for float32 models.
"""

from __future__ import annotations

import contextlib
import functools
from pathlib import Path
from typing import Any, ContextManager

import torch

AUTO_MIN_PARAMS = 20_000_000


@functools.lru_cache(maxsize=1)
def cpu_bf16() -> str | None:
    """The CPU's native bf16 instruction set ("AMX", "AVX512-BF16") or None (also off Linux)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return None
    flags = next((line.split(":", 1)[1].split() for line in text.splitlines() if line.startswith("flags")), [])
    if "amx_bf16" in flags:
        return "AMX"
    return "AVX512-BF16" if "avx512_bf16" in flags else None


def choose(setting: str, model: Any) -> tuple[bool, str]:
    """Whether to autocast to bf16 for `setting` (auto | bfloat16 | off), and why, in words."""
    if setting == "off":
        return False, "fp32 (model.autocast=off)"
    device = next(model.parameters()).device
    if device.type != "cpu":
        return False, f"no autocast on {device.type} (set model.dtype instead)"
    isa = cpu_bf16()
    if setting == "bfloat16":
        return True, f"bf16 autocast (model.autocast=bfloat16; CPU bf16 instructions: {isa or 'none, emulated'})"
    if isa is None:
        return False, "fp32 (this CPU has no AMX or AVX512-BF16)"
    if next(model.parameters()).dtype != torch.float32:
        return False, "no autocast: the weights are not float32"
    params = sum(p.numel() for p in model.parameters())
    if params < AUTO_MIN_PARAMS:
        return False, f"fp32 ({params / 1e6:.1f}M parameters: below {AUTO_MIN_PARAMS // 10**6}M bf16 is slower)"
    return True, f"bf16 autocast ({isa}; fp32 master weights and optimizer state)"


def autocast(enabled: bool) -> ContextManager:
    """The context generation, log-probs and the update run in."""
    return torch.autocast("cpu", dtype=torch.bfloat16) if enabled else contextlib.nullcontext()
