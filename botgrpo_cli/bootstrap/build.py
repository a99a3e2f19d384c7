"""Build, measure and cache a warm-started model for a task."""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from transformers import GenerationConfig

from botgrpo_cli.bootstrap.base_rate import measure
from botgrpo_cli.bootstrap.cache import INFO_FILE, atomic_dir, is_complete, model_dir, recipe_hash, write_json
from botgrpo_cli.bootstrap.model import SIZES, make_model
from botgrpo_cli.bootstrap.sft import SftConfig, encode_pairs, train_sft
from botgrpo_cli.bootstrap.tokenizer import save_tokenizer, train_tokenizer
from botgrpo_base.cache import one_builder
from botgrpo_cli.console import console
from botgrpo_cli.errors import UserError
from botgrpo_tasks import Task, get_task

Progress = Callable[[str, int, int], None]  # (stage, done, total)

BUILD_VERSION = 2  # bump when the build changes in a way the recipe does not show
# 2: react_synth's success metric became all_ok (spec checks); bootstrap.json records the base rate
RECIPES = {  # size -> corpus, tokenizer and warm-start settings
    "tiny": dict(corpus=8000, vocab=1024, sft=SftConfig(steps=500, batch_size=16, lr=6e-3), n_measure=256),
    "small": dict(corpus=20000, vocab=2048, sft=SftConfig(steps=1500, lr=2e-3), n_measure=512),
}


def _recipe(task: Task, size: str) -> dict[str, Any]:
    """Everything the build depends on; its hash names the cache entry, so a task's options (and
    its own warm-start settings, `Task.bootstrap_sft`) give a variant its own model."""
    r = dict(RECIPES[size])
    sft_overrides = getattr(task, "bootstrap_sft", {}).get(size, {})
    r["sft"] = dataclasses.asdict(dataclasses.replace(r["sft"], **sft_overrides))
    recipe = {"build": BUILD_VERSION, "task": task.name, "options": task.options, "size": size, "model": SIZES[size], **r}
    version = getattr(task, "corpus_version", 1)
    recipe |= {"task_sft": sft_overrides} if sft_overrides else {}  # (the other tasks keep their keys)
    return recipe | ({"corpus_version": version} if version != 1 else {})


def bootstrap(
    task: str | Task,
    out: str | Path | None = None,
    seed: int = 0,
    force: bool = False,
    size: str = "tiny",
    progress: Progress | None = None,
) -> Path:
    """Return the directory of the model for `task` (HF format), building it unless cached.

    The build is deterministic for a seed: tokenizer and warm start on the task's corpus, then the
    base success rate measured on eval prompts and stored in bootstrap.json beside the model.
    """
    if size not in RECIPES:
        raise KeyError(f"unknown size {size!r}; known: {', '.join(RECIPES)}")
    task_obj = get_task(task, seed=seed) if isinstance(task, str) else task
    recipe = _recipe(task_obj, size)
    final = Path(out) if out is not None else model_dir(task_obj.name, size, seed, recipe)
    if not force and is_complete(final, recipe):
        return final
    if final.is_dir() and any(final.iterdir()) and not (final / INFO_FILE).is_file():
        raise UserError(f"{final} exists and is not a bootstrapped model; pass an empty or new directory to --out")
    with one_builder(final):
        if not force and is_complete(final, recipe):  # another process built it while this one waited
            return final
        with atomic_dir(final) as tmp:
            info = _build(task_obj, recipe, seed, tmp, progress or (lambda *_: None))
            info["recipe_hash"] = recipe_hash(recipe)
            write_json(tmp / INFO_FILE, info)
    if progress is None:  # library use: say what was built (the CLI prints its own summary)
        console.print(f"bootstrap {task_obj.name}: {describe(info)}")
    return final


def describe(info: dict[str, Any]) -> str:
    """One line for people: build time and base success rate."""
    rate = info.get("base_success_rate")
    metric = info.get("success_metric", "success")
    if rate is None:
        shown = f"not measured ({info.get('measure_error')})"
    else:
        shown = f"{rate:.1%} ({info['n_measured']} samples at T=1)"
    return f"built in {info['build_seconds']:.0f} s; base {metric}: {shown}"


def read_info(path: str | Path) -> dict[str, Any]:
    """The build's record: recipe, timings, base success rate."""
    return json.loads((Path(path) / INFO_FILE).read_text())


def _corpus_extras(task: Task) -> dict[str, Any]:
    """A task whose repair turns quote its service (react_synth revise) gets the service's rejections."""
    if not getattr(task, "rejections_from_service", False):
        return {}
    from botgrpo_cli.turns.feedback import service_rejections

    return {"reject": service_rejections(task)}


def _build(task: Task, recipe: dict[str, Any], seed: int, out: Path, progress: Progress) -> dict[str, Any]:
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny matmuls gain nothing from threads, and spin-waits hurt on busy hosts
    try:
        t0 = time.perf_counter()
        torch.manual_seed(seed)
        pairs = task.corpus(recipe["corpus"], seed=seed, **_corpus_extras(task))
        progress("tokenizer", 0, 1)
        tokenizer = train_tokenizer((p + c for p, c in pairs), recipe["vocab"])
        progress("tokenizer", 1, 1)
        model = make_model(recipe["size"], len(tokenizer), tokenizer.eos_token_id, tokenizer.pad_token_id)
        rows = encode_pairs(tokenizer, pairs)
        cfg = SftConfig(**recipe["sft"])
        loss = train_sft(model, rows, tokenizer.pad_token_id, cfg, seed, lambda s, _: progress("train", s, cfg.steps))
        t_train = time.perf_counter() - t0
        model.generation_config = GenerationConfig(
            do_sample=True, temperature=1.0, top_k=0, top_p=1.0, max_new_tokens=task.max_new_tokens,
            eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
        )
        model.save_pretrained(out)
        save_tokenizer(tokenizer, out)
        measured = measure(task, model, tokenizer, recipe["n_measure"], seed, progress)
        return {
            "task": task.name, "seed": seed, "recipe": recipe, "final_loss": loss,
            "success_metric": task.success_metric,
            "parameters": sum(p.numel() for p in model.parameters()),
            "train_seconds": round(t_train, 2), "build_seconds": round(time.perf_counter() - t0, 2), **measured,
        }
    finally:
        torch.set_num_threads(threads)
