"""`botgrpo bench rollout`: the lean decode loop against HF `generate` (and vLLM, when installed) on the
same batch and weights.

One process, one model, the task's first prompts (its chat formatting and stop strings), sampled at
temperature 1; engines (and, on a CPU with native bf16, fp32 vs bf16 autocast) alternate over the
repeats so load from other processes hits them alike. Also printed: whether greedy rows are equal
token for token, and the mean |log-prob| difference of bf16 autocast against fp32 on the sampled tokens.
vLLM samples in its own dtype (float32, and bfloat16 where the CPU has it) instead of under autocast;
its weight sync (what every training step pays on top of generation) is timed too.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, replace
from typing import Any

import torch

TARGET = 1.5  # the lean loop's speed-up over HF generate, same batch and precision


@dataclass
class RolloutFigures:
    engine: str
    precision: str
    seconds: float  # median per generate call
    tokens: int  # generated tokens per call (median)

    @property
    def tokens_per_s(self) -> float:
        return self.tokens / self.seconds


@dataclass
class RolloutReport:
    rows: list[RolloutFigures]
    greedy_equal: bool
    bf16_logp_diff: float | None  # mean |logp_bf16 - logp_fp32| per sampled token; None without bf16
    sync_seconds: dict[str, float] | None = None  # precision -> median seconds of one vLLM weight sync


def _setup(task_name: str, model: str | None, prompts: int) -> tuple[Any, Any, list[str], Any]:
    from botgrpo_cli.config import ModelConfig
    from botgrpo_cli.models.loading import load_tokenizer
    from botgrpo_cli.trainer.policy import load_model, resolve_model_path
    from botgrpo_tasks import get_task

    task = get_task(task_name, seed=0)
    cfg = ModelConfig(name_or_path=model)  # float32; a .gguf file works as in training
    path = resolve_model_path(cfg, task_name)
    tok = load_tokenizer(path)
    lm = load_model(path, cfg, trainable=False)
    texts = [task.format_prompt(ex, tok) for ex in task.train_examples()[:prompts]]
    return task, tok, texts, lm


def _vllm_engines(lm: Any, tok: Any, model_dir: str, modes: list[str]) -> dict[str, Any]:
    """precision -> a colocated vLLM engine holding `lm`'s weights in that dtype."""
    from botgrpo_cli.rollout.vllm import VLLMEngine, VLLMOptions

    dtypes = {"fp32": "float32", "bf16": "bfloat16"}
    return {mode: VLLMEngine(lm, tok, model_dir, VLLMOptions(dtype=dtypes[mode], enforce_eager=True,
                                                              max_model_len=2048, kv_cache_gib=1.0)) for mode in modes}


def run(task: str = "arith_synth", model: str | None = None, prompts: int = 8, group: int = 8,
        new_tokens: int = 48, threads: int = 2, repeats: int = 3, vllm: bool = False,
        bf16: str = "auto") -> RolloutReport:
    """bf16: auto (beside fp32 on a CPU with native bf16), on (also where bf16 is emulated), off."""
    from botgrpo_cli.rollout import FastEngine, HFEngine, SamplingParams
    from botgrpo_cli.trainer.logprobs import batch_logps
    from botgrpo_cli.models.precision import autocast, cpu_bf16
    from botgrpo_cli.trainer.policy import resolve_model_path
    from botgrpo_cli.config import ModelConfig, RolloutConfig

    torch.set_num_threads(threads)
    task_obj, tok, texts, lm = _setup(task, model, prompts)
    engines: dict[str, Any] = {"hf generate": HFEngine(lm, tok), "botgrpo fast": FastEngine(lm, tok)}
    params = SamplingParams.from_config(RolloutConfig(max_new_tokens=new_tokens), task_obj)
    if bf16 not in ("auto", "on", "off"):
        raise ValueError(f"bf16={bf16!r}: choose auto, on or off")
    modes = ["fp32", "bf16"] if bf16 == "on" or (bf16 == "auto" and cpu_bf16()) else ["fp32"]
    by_mode = _vllm_engines(lm, tok, resolve_model_path(ModelConfig(name_or_path=model), task), modes) if vllm else {}
    if by_mode:
        engines["vllm"] = by_mode
    times: dict[tuple[str, str], list[float]] = {(e, m): [] for e in engines for m in modes}
    tokens: dict[tuple[str, str], list[int]] = {k: [] for k in times}
    syncs: dict[str, list[float]] = {m: [] for m in by_mode}

    def engine_for(name: str, mode: str) -> Any:
        return engines[name][mode] if name == "vllm" else engines[name]

    for mode in modes:  # warm-up: first calls allocate and fill caches
        for name in engines:
            engine_for(name, mode).generate(texts[:1], 1, params)
    for r in range(repeats + 1):
        for mode in modes:
            for name in engines:
                engine = engine_for(name, mode)
                with autocast(mode == "bf16" and name != "vllm"):  # vLLM computes in its own dtype
                    t0 = time.perf_counter()
                    batch = engine.generate(texts, group, params)
                    times[name, mode].append(time.perf_counter() - t0)
                tokens[name, mode].append(int(batch.mask.sum()))
                if name == "vllm":
                    t0 = time.perf_counter()
                    engine.sync_weights()
                    syncs[mode].append(time.perf_counter() - t0)
    greedy = replace(params, temperature=0.0)
    a, b = (engines[e].generate(texts, 1, greedy) for e in ("hf generate", "botgrpo fast"))
    diff = None
    if "bf16" in modes:
        with autocast(True):
            sampled = engines["botgrpo fast"].generate(texts, group, params)
        args = (lm, sampled.prompt_ids, sampled.completion_ids, sampled.mask, engines["hf generate"].pad_id, 1.0, 16)
        with autocast(True):
            low = batch_logps(*args)
        exact = batch_logps(*args)
        diff = float((low - exact).abs()[sampled.mask].mean())
    rows = [RolloutFigures(e, m, statistics.median(times[e, m][1:] or times[e, m]),
                           int(statistics.median(tokens[e, m]))) for m in modes for e in engines]
    sync = {m: statistics.median(v[1:] or v) for m, v in syncs.items()} or None
    return RolloutReport(rows, torch.equal(a.completion_ids, b.completion_ids) and a.texts == b.texts, diff, sync)
