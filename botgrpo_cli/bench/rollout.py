"""`botgrpo bench rollout`: the lean decode loop against HF `generate` on the same batch and weights.

One process, one model, the task's first prompts (its chat formatting and stop strings), sampled at
temperature 1; engines (and, on a CPU with native bf16, fp32 vs bf16 autocast) alternate over the
repeats so load from other processes hits them alike. Also printed: whether greedy rows are equal
token for token, and the mean |log-prob| difference of bf16 autocast against fp32 on the sampled tokens.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
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


def run(task: str = "arith_synth", model: str | None = None, prompts: int = 8, group: int = 8,
        new_tokens: int = 48, threads: int = 2, repeats: int = 3) -> RolloutReport:
    from botgrpo_cli.rollout import FastEngine, HFEngine, SamplingParams
    from botgrpo_cli.trainer.logprobs import batch_logps
    from botgrpo_cli.models.precision import autocast, cpu_bf16

    torch.set_num_threads(threads)
    task_obj, tok, texts, lm = _setup(task, model, prompts)
    engines = {"hf generate": HFEngine(lm, tok), "botgrpo fast": FastEngine(lm, tok)}
    params = SamplingParams(max_new_tokens=new_tokens, temperature=1.0, stop=tuple(task_obj.stop), seed=0)
    modes = ["fp32", "bf16"] if cpu_bf16() else ["fp32"]
    times: dict[tuple[str, str], list[float]] = {(e, m): [] for e in engines for m in modes}
    tokens: dict[tuple[str, str], list[int]] = {k: [] for k in times}
    for name, engine in engines.items():  # warm-up: first calls allocate and fill caches
        engine.generate(texts[:1], 1, params)
    for r in range(repeats + 1):
        for mode in modes:
            for name, engine in engines.items():
                with autocast(mode == "bf16"):
                    t0 = time.perf_counter()
                    batch = engine.generate(texts, group, params)
                    times[name, mode].append(time.perf_counter() - t0)
                tokens[name, mode].append(int(batch.mask.sum()))
    greedy = SamplingParams(**{**params.__dict__, "temperature": 0.0})
    a, b = (e.generate(texts, 1, greedy) for e in engines.values())
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
    return RolloutReport(rows, torch.equal(a.completion_ids, b.completion_ids) and a.texts == b.texts, diff)
