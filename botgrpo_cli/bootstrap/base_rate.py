"""Measure a freshly built model: sample eval prompts at temperature 1, score with the task's service."""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import torch
from transformers import PreTrainedModel, PreTrainedTokenizerFast

from botgrpo_tasks import Example, Task


@torch.no_grad()
def sample_completions(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerFast,
    prompts: list[str],
    max_new_tokens: int,
    seed: int,
    batch_size: int = 64,
    on_done: Callable[[int], None] | None = None,
) -> list[str]:
    """One completion per prompt, sampled at temperature 1 (left-padded batches, ended by EOS)."""
    torch.manual_seed(seed)
    tokenizer.padding_side = "left"
    texts: list[str] = []
    for i in range(0, len(prompts), batch_size):
        enc = tokenizer(prompts[i : i + batch_size], return_tensors="pt", padding=True, add_special_tokens=False)
        out = model.generate(
            **enc,
            do_sample=True,
            temperature=1.0,
            top_k=0,
            top_p=1.0,
            max_new_tokens=max_new_tokens,
            eos_token_id=tokenizer.eos_token_id,
            pad_token_id=tokenizer.pad_token_id,
        )
        texts += tokenizer.batch_decode(out[:, enc["input_ids"].shape[1] :], skip_special_tokens=True)
        if on_done is not None:
            on_done(len(texts))
    tokenizer.padding_side = "right"
    return texts


def score_completions(
    task: Task, examples: list[Example], completions: list[str], on_done: Callable[[int], None] | None = None
) -> list[dict[str, float]]:
    """The service's metrics for each completion, scored in-process with the task's backend."""
    from botgrpo_rewards.protocol import ScoreRequest
    from botgrpo_rewards.registry import load_backend

    backend = load_backend(task.service)
    backend.start()
    try:

        def one(k: int) -> dict[str, float]:
            ex = examples[k]
            req = ScoreRequest(id=str(k), completion=completions[k], prompt=ex.prompt,
                               reference=ex.reference, options=dict(task.service_options))
            metrics = backend.score(req, time.monotonic() + 60.0).metrics
            if on_done is not None:
                on_done(1)
            return metrics

        with ThreadPoolExecutor(max_workers=min(8, backend.max_inflight)) as pool:
            return list(pool.map(one, range(len(completions))))
    finally:
        backend.close()


def summarize(task: Task, metrics: list[dict[str, float]]) -> dict[str, float]:
    """Mean of each eval metric and of the success metric over the samples."""
    names = dict.fromkeys((task.success_metric, *task.eval_metrics))
    return {m: sum(x.get(m, 0.0) for x in metrics) / max(1, len(metrics)) for m in names}
