"""`Trainer`: botgrpo's trainer from Python, shaped like TRL's `GRPOTrainer` (docs/python-api.md).

    from botgrpo_cli import Config, RolloutConfig, RunConfig, Trainer
    Trainer(model="HuggingFaceTB/SmolLM2-135M-Instruct", reward_funcs=[my_reward], train_dataset=dataset,
            args=Config(rollout=RolloutConfig(group_size=4), run=RunConfig(steps=10))).train()

It only fills a Config (model.name_or_path, reward.function, run.task=prompts with the dataset
written to a file) and calls `botgrpo_cli.trainer.train`: the CLI's run, with the same names for
models (hub ids, folders, .gguf files, packaged GGUF models) and rewards.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any, Callable

from botgrpo_cli.config import Config, checked, validate
from botgrpo_cli.errors import UserError
from botgrpo_cli.trl_args import from_trl, is_trl_args
from botgrpo_cli.trl_tools import tool_specs

OnStep = Callable[[int, dict], None]

# GRPOTrainer arguments with no counterpart here, and what to do instead
UNSUPPORTED = {
    "processing_class": "the tokenizer is loaded with the model (model=NAME); drop processing_class",
    "reward_processing_classes": "a reward model runs inside a reward function here; load it there",
    "callbacks": "pass on_step=fn(step, metrics), or a list of such functions",
    "optimizers": "AdamW is configured by Config(optim=OptimConfig(lr=..., weight_decay=..., betas=..., "
                  "warmup_steps=...))",
    "rollout_func": "generation is botgrpo's engines' (rollout.engine fast, hf or vllm)",
    "quantization_config": "bitsandbytes models are not supported; a quantised .gguf file loads dequantised "
                           "to model.dtype (model='model.Q8_0.gguf')",
}
DEFAULT_TASK = Config().run.task  # run.task when a Config does not name one


class Trainer:
    """Train `model` on `train_dataset` with `reward_funcs`, as TRL's GRPOTrainer does, by botgrpo's
    trainer. Every setting is a typed field of `args` (a Config); the arguments here take precedence
    only over fields left at their defaults, and clash with ones set to something else.

    args: a Config, or TRL's GRPOConfig (or a dict of its fields), mapped field by field
        (botgrpo_cli/trl_args.py; a field without a counterpart set away from TRL's default is refused).
    tools: TRL's tools: plain functions with type hints and a docstring (botgrpo_cli/trl_tools.py),
        called between model turns (rollout.max_turns; GRPOConfig's max_tool_calling_iterations).
    environment_factory: TRL's environments: a class (or a function making an instance) with
        reset(**row) and tool methods, one instance per rollout; optionally get_reward(), one more
        reward function of weight 1; or a dict of them chosen by the rows' `environment` column
        (botgrpo_cli/trl_environments.py).
    model: a hub id, model folder, .gguf file or packaged GGUF name (as `botgrpo train --model`);
        None = args.model.name_or_path, else the task's bootstrapped tiny model.
    reward_funcs: one or a list of: a Python callable (TRL's reward-function convention),
        "path/to/file.py:NAME" or "MODULE:NAME", or a reward service name ("math"). Weights:
        args.reward.weights (TRL's reward_weights). None = args.reward, else the task's service.
    train_dataset / eval_dataset: a datasets.Dataset, IterableDataset, a list of row dicts, a data
        file or a Hub dataset id, with TRL's `prompt` column (text, or a list of chat messages); other
        columns reach the reward functions as keyword lists. None = args.run.task's own prompts.
        Without eval_dataset every row trains, as in TRL, and held-out evaluation
        (run.eval_every) uses the first training prompts.
    peft_config: a peft LoraConfig (its r, lora_alpha, lora_dropout, target_modules), as TRL takes it.
    on_step: fn(step, metrics) or a list of them, called after each training step.
    """

    def __init__(self, model: str | os.PathLike | None = None, reward_funcs: Any = None, args: Any = None,
                 train_dataset: Any = None, eval_dataset: Any = None, peft_config: Any = None,
                 on_step: OnStep | list[OnStep] | None = None, tools: list | None = None,
                 environment_factory: Any = None, **unsupported: Any):
        for name in unsupported:
            if name not in UNSUPPORTED:
                raise TypeError(f"Trainer() got an unexpected keyword argument {name!r}")
            if unsupported[name] not in (None, (None, None)):  # TRL's defaults (optimizers=(None, None)) pass
                raise UserError(f"Trainer({name}=...): {UNSUPPORTED[name]} (docs/from-trl.md)")
        self.on_step = [] if on_step is None else list(on_step) if isinstance(on_step, (list, tuple)) else [on_step]
        if not all(callable(fn) for fn in self.on_step):
            raise UserError("on_step must be a function fn(step, metrics) or a list of them")
        if is_trl_args(args) or isinstance(args, dict):  # TRL's GRPOConfig, or a dict of its fields
            args = from_trl(args, len(train_dataset) if hasattr(train_dataset, "__len__") else None)
        if args is not None and not isinstance(args, Config):
            raise UserError(f"args must be a botgrpo_cli.Config, a TRL GRPOConfig or a dict of its fields, got "
                            f"{type(args).__name__}")
        # types now; the range and cross-field checks once the arguments below are in (validate, at the end):
        # reward.weights and algo.reward_aggregation are checked against the reward_funcs given here
        cfg = checked(args if args is not None else Config(), complete=False)
        if model is not None:
            _model(cfg, model)
        if peft_config is not None:
            _lora(cfg, peft_config)
        if reward_funcs is not None:
            _rewards(cfg, reward_funcs)
        if tools:
            tool_specs(cfg, tools)
        if environment_factory is not None:
            from botgrpo_cli.trl_environments import environment_setup  # the tool machinery: only when asked

            if train_dataset is None:
                raise UserError("environment_factory needs a train_dataset: rows whose columns each rollout's reset "
                                "gets (an environment that makes its own prompts: rows it ignores)")
            environment_setup(cfg, environment_factory, reward_funcs is not None)
        if train_dataset is not None:
            _datasets(cfg, train_dataset, eval_dataset)
        elif eval_dataset is not None:
            raise UserError("eval_dataset needs a train_dataset (or set args.run.task_options eval_path)")
        validate(cfg)
        self.config = cfg  # what train() runs: the one the run directory's config.yaml records
        self.result: Any = None

    def train(self, resume_from_checkpoint: bool | str | os.PathLike = False) -> Any:
        """Run the training; returns a TrainResult (run_dir, metrics, samples, curves).
        resume_from_checkpoint: True continues the run in args.run.out_dir, a path the run there."""
        from botgrpo_cli.trainer import train

        cfg = self.config
        if isinstance(resume_from_checkpoint, (str, os.PathLike)):
            cfg = dataclasses.replace(cfg, run=dataclasses.replace(cfg.run, out_dir=str(resume_from_checkpoint)))
        self.result = train(cfg, resume=bool(resume_from_checkpoint), on_step=self._on_step if self.on_step else None)
        return self.result

    def _on_step(self, step: int, metrics: dict) -> None:
        for fn in self.on_step:
            fn(step, metrics)


def _model(cfg: Config, model: Any) -> None:
    if not isinstance(model, (str, os.PathLike)):
        raise UserError(f"model must be a name or path (hub id, model folder, .gguf file or packaged GGUF name), got "
                        f"a {type(model).__name__}; save an in-memory model with save_pretrained and pass its folder")
    if cfg.model.name_or_path not in (None, str(model)):
        raise UserError(f"model={str(model)!r} and args.model.name_or_path={cfg.model.name_or_path!r}: give one")
    cfg.model.name_or_path = str(model)


def _lora(cfg: Config, peft: Any) -> None:
    """peft's LoraConfig -> model.lora_*."""
    if not hasattr(peft, "r"):
        raise UserError(f"peft_config must be a peft LoraConfig, got {type(peft).__name__}")
    if cfg.model.lora_r not in (0, int(peft.r)):
        raise UserError(f"peft_config (r={peft.r}) and args.model.lora_r={cfg.model.lora_r} both set LoRA: give one")
    targets = getattr(peft, "target_modules", None)
    if isinstance(targets, str):
        raise UserError("peft_config.target_modules as a regular expression is not supported; give a list of names")
    cfg.model.lora_r, cfg.model.lora_alpha = int(peft.r), int(peft.lora_alpha)
    cfg.model.lora_dropout = float(getattr(peft, "lora_dropout", 0.0))
    cfg.model.lora_target_modules = sorted(targets) if targets else []


def _rewards(cfg: Config, reward_funcs: Any) -> None:
    """Functions (callables, FILE.py:NAME, MODULE:NAME) -> reward.function; one service name ->
    reward.service; service names with anything else -> reward.services, one entry each."""
    r = cfg.reward
    if r.function is not None or r.service is not None or r.services or r.url is not None:
        raise UserError("reward_funcs and args.reward (function, service, services or url) both name the reward: "
                        "give one")
    items = list(reward_funcs) if isinstance(reward_funcs, (list, tuple)) else [reward_funcs]
    models = [f for f in items if hasattr(f, "forward") and hasattr(f, "config") or
              isinstance(f, str) and "/" in f and ":" not in f and not f.endswith(".py")]
    if models:
        raise UserError(f"reward_funcs: {models[0]!r} looks like a reward model; a reward model runs inside a reward "
                        "function here (load it there and return its scores), or behind `botgrpo reward serve`")
    bad = [f for f in items if not (callable(f) or (isinstance(f, str) and f))]
    if bad or not items:
        raise UserError(f"reward_funcs must be callables, 'path/to/file.py:NAME' / 'MODULE:NAME' strings or reward "
                        f"service names, or a non-empty list of them; got {bad[0] if bad else reward_funcs!r}")
    services = [f for f in items if isinstance(f, str) and ":" not in f]
    if not services:
        r.function = items if isinstance(reward_funcs, (list, tuple)) else items[0]
    elif len(items) == 1:
        r.service = services[0]
    else:
        from botgrpo_cli.reward_client.functions import function_name, unique_names

        names = unique_names([f if f in services else function_name(f) for f in items])
        r.services = {key: 1.0 if f in services else {"function": f} for key, f in zip(names, items)}


def _datasets(cfg: Config, train_dataset: Any, eval_dataset: Any) -> None:
    """run.task = prompts over the dataset's file(s). An IterableDataset gives the rows the run can draw."""
    from botgrpo_cli.trainer.dataset_files import dataset_path

    if cfg.run.task not in (DEFAULT_TASK, "prompts"):
        raise UserError(f"train_dataset and args.run.task={cfg.run.task!r} both give the prompts: give one")
    taken = sorted({"path", "eval_path", "eval_fraction"} & set(cfg.run.task_options))
    if taken:
        raise UserError(f"train_dataset and args.run.task_options {', '.join(taken)} both give the data: give one")
    a = cfg.algo
    rows = cfg.run.steps * cfg.rollout.prompts_per_step * (a.max_rounds if a.dynamic_sampling else 1)
    path = dataset_path(train_dataset, "train_dataset", rows)
    held = path if eval_dataset is None else dataset_path(eval_dataset, "eval_dataset", cfg.run.eval_prompts)
    cfg.run.task = "prompts"
    cfg.run.task_options = {**cfg.run.task_options, "path": path, "eval_path": held}
