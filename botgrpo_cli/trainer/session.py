"""Everything a run needs, set up in an order that fails before anything is written to disk."""

from __future__ import annotations

import random
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ContextManager, Iterator

import numpy as np
import torch

from botgrpo_cli.config import Config
from botgrpo_cli.console import console
from botgrpo_cli.errors import UserError
from botgrpo_cli.reward_client.span_noise import SpanNoise, parse_span_noise
from botgrpo_cli.rollout import Engine, FastEngine, HFEngine, SamplingParams
from botgrpo_cli.rollout.choice import choose_engine
from botgrpo_cli.rollout.hf import own_copy
from botgrpo_cli.rollout.turns import MultiTurn, revise_with, settings_from
from botgrpo_cli.trainer import checkpoint, defaults
from botgrpo_cli.trainer.checkpoint import TrainState
from botgrpo_cli.trainer.degenerate import check_settings
from botgrpo_cli.trainer.distributed import Dist, fully_shard_policy
from botgrpo_cli.models.loading import load_tokenizer, thinking_mismatch
from botgrpo_cli.models.precision import autocast, choose
from botgrpo_cli.trainer.policy import load_model, loads_reference_copy, resolve_model_path
from botgrpo_cli.trainer.rollouts import PromptStream
from botgrpo_cli.trainer.update import make_optimizer

if TYPE_CHECKING:  # annotations only: the session imports these lazily
    from transformers import PreTrainedTokenizerBase

    from botgrpo_cli.reward_client import RewardPool
    from botgrpo_cli.reward_client.combined import CombinedPool
    from botgrpo_tasks import Task


@dataclass
class Session:
    cfg: Config
    task: Task
    tok: PreTrainedTokenizerBase
    model: torch.nn.Module  # the policy as trained: DDP/FSDP-wrapped under several processes
    ref: torch.nn.Module | None  # frozen reference copy when algo.beta > 0 without LoRA (policy.reference_policy)
    engine: Engine
    pool: RewardPool | CombinedPool  # CombinedPool with reward.services
    opt: torch.optim.Optimizer
    sched: torch.optim.lr_scheduler.LRScheduler
    stream: PromptStream
    state: TrainState
    run_dir: Path
    params: SamplingParams  # the task's defaults merged with the rollout section (seed set per call)
    service_options: dict
    dist: Dist = Dist()
    bf16: bool = False  # bf16 autocast around generation, log-probs and the update (models/precision.py)
    turns: MultiTurn | None = None  # multi-turn rollouts over `engine` (run.tools, run.environment, rollout.max_turns)

    def precision(self) -> ContextManager:
        return autocast(self.bf16)

    @property
    def policy(self) -> Any:
        """The policy without its DDP wrapper: for generation, no-grad log-probs and saving."""
        return getattr(self.model, "module", self.model)

    @property
    def span_noise(self) -> SpanNoise | None:
        """reward.span_noise, None when off (the spans then go to the projection untouched)."""
        noise = parse_span_noise(self.cfg.reward.span_noise)
        return None if noise.off else noise

    def prompt_texts(self, examples: list) -> list[str]:
        """The formatted prompts, with the run's system prompt and chat-template arguments."""
        run = self.cfg.run
        return [self.task.format_prompt(ex, self.tok, run.system_prompt, self.template_kwargs, run.chat_template)
                for ex in examples]

    @property
    def trained_limit(self) -> int:
        """The most tokens a completion can train: the generation limit per model turn times the turns
        (DAPO's overlong shaping and Dr. GRPO's normaliser count a trajectory's trained tokens)."""
        return self.params.max_new_tokens * (1 if self.turns is None else self.turns.settings.max_turns)

    @property
    def template_kwargs(self) -> dict:
        """run.chat_template_kwargs, plus the tools' schemas when the model has tools."""
        return dict(self.cfg.run.chat_template_kwargs) if self.turns is None else self.turns.template_kwargs

    def request_options(self, prompt_texts: list[str]) -> list[dict]:
        """Per-prompt request options: the reasoning ones (does this formatted prompt open the
        thinking block?) under service_options, so reward.options still wins."""
        return [{**self.task.think_options(p), **self.service_options} for p in prompt_texts]

    def save(self) -> None:
        """Rank 0 writes the checkpoint (under FSDP every rank first helps gather the weights)."""
        weights = self.dist.full_state_dict(self.model)
        optim_state = self.dist.full_optimizer_state(self.model, self.opt)
        if self.dist.main:
            checkpoint.save(self.run_dir, self.state, self.policy, self.tok, self.opt, self.sched,
                            self.cfg.to_yaml(), self.cfg.run.keep_last, weights, optim_state)
        self.dist.barrier()


def _task(cfg: Config) -> Any:
    from botgrpo_tasks import get_task

    try:
        return get_task(cfg.run.task, seed=cfg.run.seed, **cfg.run.task_options)
    except TypeError as err:
        raise UserError(f"run.task_options do not fit task {cfg.run.task!r}: {err}") from None


def _engine(cfg: Config, model: Any, tok: Any, path: str) -> Engine:
    if cfg.rollout.engine in ("hf", "fast"):
        kind = HFEngine if cfg.rollout.engine == "hf" else FastEngine
        if cfg.rollout.max_staleness > 0:  # the producer samples from a copy the optimizer leaves alone
            return kind(own_copy(model), tok, source=model)
        return kind(model, tok)
    from botgrpo_cli.rollout.vllm import VLLMEngine, VLLMOptions

    options = VLLMOptions.from_config(cfg.rollout, cfg.model.dtype)
    if cfg.rollout.engine == "vllm_server":
        from botgrpo_cli.rollout.vllm_server import engine_for

        return engine_for(model, tok, cfg.rollout.vllm_url, cfg.rollout.vllm_server_timeout_s, (path, options))
    engine = VLLMEngine(model, tok, path, options, seed=cfg.run.seed)
    engine.sync_weights()  # a resumed or LoRA policy differs from the files vLLM loaded
    return engine


def _distributed(cfg: Config) -> Dist:
    from botgrpo_cli.trainer.distributed import make_accelerator

    acc = make_accelerator(cfg.run.distributed)
    dist = Dist(acc.process_index, acc.num_processes, acc)
    if cfg.rollout.prompts_per_step % dist.world:
        raise UserError(f"rollout.prompts_per_step={cfg.rollout.prompts_per_step} must be a multiple of the "
                        f"number of processes ({dist.world}): each process takes an equal share of whole groups")
    return dist


def _run_dir(cfg: Config, resume: bool, main: bool = True) -> tuple[Path, checkpoint.Loaded | None]:
    """The run directory (not created yet) and, when resuming, its newest intact checkpoint."""
    if cfg.run.out_dir is None:
        if resume:
            raise UserError("--resume needs the run directory: pass --out DIR (or set run.out_dir)")
        stamp = time.strftime("%Y%m%d-%H%M%S")
        return Path("runs") / f"{cfg.run.task}-{cfg.algo.name}-{stamp}", None
    run_dir = Path(cfg.run.out_dir)
    if run_dir.exists() and not run_dir.is_dir():
        raise UserError(f"--out {run_dir} is a file, not a folder; pass a folder for the run")
    if not resume:
        if (run_dir / "metrics.jsonl").exists() or checkpoint.latest(run_dir) is not None:
            raise UserError(f"{run_dir} already holds a run; add --resume to continue it or pick another --out")
        return run_dir, None
    def warn(msg: str) -> None:
        if main:  # one line per run, not one per process
            console.print(f"[yellow]warning:[/] {msg}", soft_wrap=True)

    loaded = checkpoint.latest_intact(run_dir, warn)
    if loaded is None:
        raise UserError(f"--resume: {run_dir} has no checkpoint to continue from; drop --resume to start fresh")
    _check_state_fits(cfg, loaded)
    return run_dir, loaded


def _check_state_fits(cfg: Config, loaded: checkpoint.Loaded) -> None:
    """A checkpoint's step and data position must be ones this run's settings can reach."""
    step, position, per_step = loaded.state.step, loaded.state.data_position, cfg.rollout.prompts_per_step
    if step > cfg.run.steps:
        raise UserError(f"--resume: {loaded.path} is at step {step}, past run.steps={cfg.run.steps}; give --steps "
                        f"above {step} to continue it")
    rounds = cfg.algo.max_rounds if cfg.algo.dynamic_sampling else 1
    if not step * per_step <= position <= step * per_step * rounds:
        raise UserError(f"--resume: {loaded.path} says {position} prompts were drawn in {step} steps, which "
                        f"{per_step} prompts a step cannot give; the checkpoint does not belong to this run")


def _prepare_run_dir(run_dir: Path, cfg: Config) -> None:
    try:
        run_dir.mkdir(parents=True, exist_ok=True)
        cfg.save(run_dir / "config.yaml")
    except OSError as err:
        raise UserError(f"cannot write the run directory {run_dir}: {err.strerror or err}; "
                        "pick a writable --out") from None


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
    from botgrpo_cli.reward_client.opening import open_reward, require_reward

    _seed_everything(cfg.run.seed)
    task = _task(cfg)
    if shared_pool is None:
        require_reward(cfg.reward, task.service)  # before any model loads
    settings = settings_from(cfg.rollout, cfg.run, task)  # a tool or environment that does not import fails here, before any model loads
    base = resolve_model_path(cfg.model, cfg.run.task, cfg.run.task_options)  # an offline hub id fails here, at once
    dist = _distributed(cfg)
    if cfg.rollout.max_staleness > 0 and cfg.algo.dynamic_sampling and dist.world > 1:
        raise UserError("rollout.max_staleness > 0 with algo.dynamic_sampling needs one process: the processes agree "
                        "on each refill round, a collective the update's all-reduce would cross; set one of them off")
    cfg.rollout.engine, engine_reason = choose_engine(cfg.rollout.engine)
    if cfg.run.distributed == "fsdp" and cfg.rollout.engine != "vllm":
        raise UserError(f"run.distributed=fsdp needs rollout.engine=vllm (HF generate cannot sample sharded "
                        f"weights); this run chose {cfg.rollout.engine}: {engine_reason}")
    if dist.main:
        console.print(f"rollout: {cfg.rollout.engine} engine ({engine_reason})")
    run_dir, loaded = _run_dir(cfg, resume, dist.main)
    ckpt = loaded.path if loaded is not None else None
    check_settings(cfg, lambda msg: dist.main and console.print(f"[yellow]warning:[/] {msg}", soft_wrap=True),
                   loaded.state.step if loaded is not None else 0)
    run_dir = dist.from_main(run_dir)  # a time-stamped name is rank 0's; also a barrier before it writes
    tok = load_tokenizer(base)
    mismatch = thinking_mismatch(tok, task.think_tags, cfg.rollout.thinking_budget, cfg.run.chat_template_kwargs)
    if mismatch and dist.main:
        console.print(f"[yellow]warning:[/] {mismatch}", soft_wrap=True)
    lora_resume = ckpt is not None and cfg.model.lora_r > 0
    model = load_model(str(ckpt / "model") if ckpt and not lora_resume else base, cfg.model,
                       adapter=str(ckpt / "model") if lora_resume else None)
    max_new = cfg.rollout.max_new_tokens or task.max_new_tokens
    prompts = [task.format_prompt(ex, tok, cfg.run.system_prompt, cfg.run.chat_template_kwargs, cfg.run.chat_template)
               for ex in task.train_examples()[:defaults.PROMPTS_MEASURED]] if cfg.optim.micro_batch_size is None else []
    defaults.resolve(cfg, model, tok, base, prompts, max_new)  # lr, micro-batch: before the optimizer and config.yaml
    ref = load_model(base, cfg.model, trainable=False).to(dist.accelerator.device) if loads_reference_copy(cfg) else None
    bf16, why = choose(cfg.model.autocast, model)
    if cfg.run.distributed == "fsdp" and dist.world > 1:
        model = fully_shard_policy(model, dist.accelerator.device)
        opt, sched = make_optimizer(model, cfg)  # over the sharded parameters
    else:
        opt, sched = make_optimizer(model, cfg)
        model, opt = dist.accelerator.prepare(model, opt)  # to the device; DDP under several processes
    stream = PromptStream(task.train_examples(), cfg.run.seed)
    state = TrainState(step=0, data_position=0)
    if ckpt is not None:
        state = checkpoint.restore(loaded, opt, sched, dist.optimizer_loader(model, opt))
        stream.position = state.data_position
    params = SamplingParams.from_config(cfg.rollout, task)
    pool = shared_pool or open_reward(cfg.reward, task.service)
    engine = None
    try:
        if dist.main:
            _prepare_run_dir(run_dir, cfg)
        engine = _engine(cfg, getattr(model, "module", model), tok, base)
        if dist.main:
            console.print(f"precision: {why}")
            if dist.world > 1:
                layout = "FSDP2, each decoder layer sharded" if cfg.run.distributed == "fsdp" else "DDP, whole replicas"
                console.print(f"distributed: {layout}, over {dist.world} processes")
        if settings is not None:
            revise_with(settings, task, pool, {**task.service_options, **cfg.reward.options}, cfg.reward.deadline_ms)
        turns = None if settings is None else MultiTurn(engine, tok, settings)
        if settings is not None and settings.tools is not None:
            settings.tools.start()
        yield Session(cfg, task, tok, model, ref, engine, pool, opt, sched, stream, state, run_dir,
                      params, {**task.service_options, **cfg.reward.options}, dist, bf16, turns)
    finally:
        if settings is not None and settings.tools is not None:
            settings.tools.close()
        if engine is not None and hasattr(engine, "close"):
            engine.close()  # a vLLM server the run started
        if shared_pool is None:
            pool.close()
