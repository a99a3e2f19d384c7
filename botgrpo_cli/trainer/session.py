"""Everything a run needs, set up in an order that fails before anything is written to disk."""

from __future__ import annotations

import random
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import torch
import yaml

from botgrpo_cli.config import Config
from botgrpo_cli.errors import UserError
from botgrpo_cli.rollout import HFEngine, SamplingParams
from botgrpo_cli.trainer import checkpoint
from botgrpo_cli.trainer.checkpoint import TrainState
from botgrpo_cli.trainer.data import PromptStream
from botgrpo_cli.trainer.policy import load_model, load_tokenizer, resolve_model_path
from botgrpo_cli.trainer.update import make_optimizer


@dataclass
class Session:
    cfg: Config
    task: Any
    tok: Any
    model: Any
    ref: Any  # frozen reference policy when algo.beta > 0, else None
    engine: HFEngine
    pool: Any  # RewardPool
    opt: Any
    sched: Any
    stream: PromptStream
    state: TrainState
    run_dir: Path
    params: SamplingParams  # the task's defaults merged with the rollout section (seed set per call)
    service_options: dict

    def prompt_texts(self, examples: list) -> list[str]:
        return [self.task.format_prompt(ex, self.tok) for ex in examples]

    def save(self) -> Path:
        return checkpoint.save(self.run_dir, self.state, self.model, self.tok, self.opt, self.sched,
                               yaml.safe_dump(self.cfg.to_dict(), sort_keys=False), self.cfg.run.keep_last)


def _task(cfg: Config) -> Any:
    from botgrpo_tasks import get_task

    try:
        return get_task(cfg.run.task, seed=cfg.run.seed, **cfg.run.task_options)
    except KeyError as err:
        raise UserError(f"run.task: {err.args[0]}") from None
    except TypeError as err:
        raise UserError(f"run.task_options do not fit task {cfg.run.task!r}: {err}") from None


def _run_dir(cfg: Config, resume: bool) -> tuple[Path, Path | None]:
    """The run directory (not created yet) and, when resuming, its latest checkpoint."""
    if cfg.run.out_dir is None:
        if resume:
            raise UserError("--resume needs the run directory: pass --out DIR (or set run.out_dir)")
        stamp = time.strftime("%Y%m%d-%H%M%S")
        return Path("runs") / f"{cfg.run.task}-{cfg.algo.name}-{stamp}", None
    run_dir = Path(cfg.run.out_dir)
    ckpt = checkpoint.latest(run_dir)
    if resume and ckpt is None:
        raise UserError(f"--resume: {run_dir} has no checkpoint to continue from; drop --resume to start fresh")
    if not resume and ((run_dir / "metrics.jsonl").exists() or ckpt is not None):
        raise UserError(f"{run_dir} already holds a run; add --resume to continue it or pick another --out")
    return run_dir, ckpt


def _seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


@contextmanager
def open_session(cfg: Config, resume: bool = False, pool: Any = None) -> Iterator[Session]:
    """Build task, models, optimizer and reward pool; create the run dir only once all succeeded.
    A caller's running `pool` (same service) is used as is and left open."""
    threads = torch.get_num_threads()
    try:
        if cfg.run.threads:
            torch.set_num_threads(cfg.run.threads)
        with _open(cfg, resume, pool) as session:
            yield session
    finally:
        torch.set_num_threads(threads)


@contextmanager
def _open(cfg: Config, resume: bool, shared_pool: Any) -> Iterator[Session]:
    from botgrpo_cli.reward_client import RewardPool

    _seed_everything(cfg.run.seed)
    task = _task(cfg)
    run_dir, ckpt = _run_dir(cfg, resume)
    base = resolve_model_path(cfg.model, cfg.run.task)
    tok = load_tokenizer(base)
    lora_resume = ckpt is not None and cfg.model.lora_r > 0
    model = load_model(str(ckpt / "model") if ckpt and not lora_resume else base, cfg.model,
                       adapter=str(ckpt / "model") if lora_resume else None)
    ref = load_model(base, cfg.model, trainable=False) if cfg.algo.beta > 0 else None
    opt, sched = make_optimizer(model, cfg)
    stream = PromptStream(task.train_examples(), cfg.run.seed)
    state = TrainState(step=0, data_position=0)
    if ckpt is not None:
        state = checkpoint.restore(ckpt, opt, sched)
        stream.position = state.data_position
    params = SamplingParams(
        max_new_tokens=cfg.rollout.max_new_tokens or task.max_new_tokens, temperature=cfg.rollout.temperature,
        top_p=cfg.rollout.top_p, stop=tuple(task.stop if cfg.rollout.stop is None else cfg.rollout.stop))
    pool = shared_pool or RewardPool(cfg.reward.service or task.service, workers=cfg.reward.workers,
                                     command=cfg.reward.command)
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        cfg.save(run_dir / "config.yaml")
        yield Session(cfg, task, tok, model, ref, HFEngine(model, tok), pool, opt, sched, stream, state, run_dir,
                      params, {**task.service_options, **cfg.reward.options})
    finally:
        if shared_pool is None:
            pool.close()
