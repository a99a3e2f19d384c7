"""Typed training configuration: dataclasses documented once, YAML files, `--set a.b=c`, validation.

Every field's help text lives in its `metadata["help"]`; validation messages and `describe()` read
it from there. Fields left as None mean "the task's (or the preset's) default".
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

import yaml

from botgrpo_cli.errors import UnknownName, UserError, closest, known_hint


def opt(default: Any, help: str, choices: tuple | Callable[[], list[str]] | None = None) -> Any:
    """A dataclass field with its help text (and allowed values, or a function returning a
    registry's names) attached as metadata."""
    meta = {"help": help, "choices": choices}
    if isinstance(default, (dict, list)):
        return field(default_factory=lambda: type(default)(default), metadata=meta)
    return field(default=default, metadata=meta)


def _presets() -> list[str]:
    from botgrpo_cli.algos import PRESETS

    return sorted(PRESETS)


def _advantages() -> list[str]:
    from botgrpo_cli.algos import ADVANTAGES

    return ADVANTAGES.names()


def _losses() -> list[str]:
    from botgrpo_cli.algos import LOSSES

    return LOSSES.names()


def _loss_aggs() -> list[str]:
    from botgrpo_cli.algos.losses import LOSS_AGGS

    return list(LOSS_AGGS)


def choices_of(f: dataclasses.Field) -> list[str] | None:
    """A field's allowed values (a registry's names are read when asked)."""
    choices = f.metadata["choices"]
    return list(choices()) if callable(choices) else (list(choices) if choices else None)


@dataclass
class ModelConfig:
    name_or_path: Optional[str] = opt(None, "HF hub id or local directory; None = the task's bootstrapped tiny model")
    dtype: str = opt("float32", "parameter dtype", ("float32", "bfloat16", "float16"))
    gradient_checkpointing: bool = opt(False, "recompute activations in backward to save memory")
    lora_r: int = opt(0, "LoRA rank; 0 trains all parameters")
    lora_alpha: int = opt(16, "LoRA alpha (scale = alpha / r)")
    lora_dropout: float = opt(0.0, "LoRA dropout")
    lora_target_modules: list = opt([], "module names LoRA adapts; empty = peft's default for the model")


@dataclass
class RolloutConfig:
    engine: str = opt("hf", "generation engine: hf (transformers generate) or vllm", ("hf", "vllm"))
    group_size: int = opt(8, "completions sampled per prompt (G)")
    prompts_per_step: int = opt(8, "prompts per training step")
    max_new_tokens: Optional[int] = opt(None, "generation length limit; None = the task's")
    temperature: float = opt(1.0, "sampling temperature (also divides logits when computing log-probs)")
    top_p: float = opt(1.0, "nucleus sampling threshold")
    stop: Optional[list] = opt(None, "stop strings (kept in the text); None = the task's")
    per_prompt_seed: bool = opt(False, "seed each prompt's group from its text: a completion does not depend on the "
                                       "batch or the process sampling it (one HF generate call per prompt)")
    vllm_gpu_memory_utilization: float = opt(0.3, "vllm: share of the GPU vLLM takes for weights and KV cache")
    vllm_tensor_parallel_size: int = opt(1, "vllm: GPUs (training processes) one vLLM engine spans")
    vllm_sleep_mode: bool = opt(False, "vllm: free vLLM's GPU memory while the trainer updates (sleep / wake_up)")
    vllm_max_model_len: Optional[int] = opt(None, "vllm: prompt + completion tokens; None = the model's limit")
    vllm_enforce_eager: bool = opt(False, "vllm: no CUDA graphs or compilation (starts in seconds, decodes slower)")
    vllm_dtype: Optional[str] = opt(None, "vllm: weight dtype float32 | bfloat16 | float16; None = model.dtype")


@dataclass
class RewardConfig:
    service: Optional[str] = opt(None, "reward service name; None = the task's")
    command: Optional[list] = opt(None, "argv that starts the service instead of `python -m botgrpo_rewards NAME`")
    workers: int = opt(1, "reward service processes")
    deadline_ms: int = opt(10000, "per-completion scoring deadline in milliseconds")
    lambda_seq: float = opt(1.0, "weight of the sequence score in each token's reward")
    lambda_tok: float = opt(1.0, "weight of the span rewards in each token's reward (0 = outcome only)")
    options: dict = opt({}, "options sent with each request, merged over the task's")
    services: dict = opt({}, "several services scored at once, in order, NAME: WEIGHT or NAME: {weight, options, "
                             "workers, command}; score = weighted sum; the first takes the role of reward.service")


@dataclass
class AlgoConfig:
    name: str = opt("bot_grpo", "preset (ALGORITHMS.md section 4) filling the fields below that are unset", _presets)
    advantage: Optional[str] = opt(None, "advantage estimator", _advantages)
    advantage_options: Optional[dict] = opt(None, "estimator options, checked against its signature (scale, eps, "
                                                  "std_correction, credit ...); None = the preset's")
    loss: Optional[str] = opt(None, "policy loss", _losses)
    loss_options: Optional[dict] = opt(None, "policy loss options, checked against its signature (clip, gspo: "
                                             "eps_low, eps_high); None = the preset's")
    loss_agg: Optional[str] = opt(None, "how token losses are averaged", _loss_aggs)
    beta: float = opt(0.0, "k3 KL penalty weight against the initial model (0 = no reference model; LoRA runs "
                           "use the base weights with the adapters off, others load a frozen copy)")
    entropy_coef: float = opt(0.0, "entropy bonus: subtract this times the per-token entropy from the loss")
    mini_batches: Optional[int] = opt(None, "optimizer steps per rollout batch, each on 1/M of its groups (or rows) "
                                            "(PPO mini-batches; capped at the number of groups, or rows)")
    epochs: int = opt(1, "passes over each rollout batch (each pass takes mini_batches steps)")
    mini_batch_split: str = opt("groups", "what a mini-batch keeps whole: groups (all completions of a prompt "
                                          "together) or rows (any completions)", ("groups", "rows"))
    dynamic_sampling: Optional[bool] = opt(None, "drop zero-variance groups and refill with new prompts (DAPO)")
    max_rounds: int = opt(3, "sampling rounds per step at most when dynamic_sampling is on")
    overlong_shaping: Optional[bool] = opt(None, "DAPO soft length penalty added to each score")
    overlong_cache: int = opt(8, "DAPO overlong buffer L_cache in tokens")


@dataclass
class OptimConfig:
    lr: float = opt(1e-3, "AdamW learning rate")
    weight_decay: float = opt(0.0, "AdamW weight decay")
    betas: list = opt([0.9, 0.99], "AdamW betas [beta1, beta2]")
    warmup_steps: int = opt(0, "linear warm-up steps (then constant)")
    grad_clip: float = opt(1.0, "max global gradient norm; 0 disables clipping")
    micro_batch_size: int = opt(16, "completions per forward/backward (gradient accumulation bounds memory)")


@dataclass
class RunConfig:
    task: str = opt("react_synth", "task name (botgrpo_tasks)")
    task_options: dict = opt({}, "options passed to the task's constructor")
    steps: int = opt(20, "training steps")
    seed: int = opt(0, "seed for sampling, data order and initialisation")
    out_dir: Optional[str] = opt(None, "run directory; None = runs/<task>-<algo>-<time>")
    save_every: int = opt(10, "checkpoint every N steps (and at the end); 0 = only at the end")
    keep_last: int = opt(2, "checkpoints kept")
    eval_every: int = opt(0, "evaluate success on held-out prompts every N steps; 0 = never")
    eval_prompts: int = opt(32, "held-out prompts per evaluation")
    threads: int = opt(0, "torch CPU threads (per process); 0 = torch's default")
    distributed: str = opt("ddp", "with several processes: ddp (replicas) or fsdp (sharded; GPUs, rollout.engine=vllm)",
                           ("ddp", "fsdp"))


@dataclass
class LogConfig:
    every: int = opt(1, "print and record metrics every N steps")
    samples_every: int = opt(5, "add completions to samples.html every N steps; 0 = never")
    samples: int = opt(4, "completions shown per sampled step")
    tensorboard: bool = opt(True, "write TensorBoard event files when tensorboard is installed")
    wandb: bool = opt(False, "log to Weights & Biases when wandb is installed")


@dataclass
class Config:
    model: ModelConfig = field(default_factory=ModelConfig)
    rollout: RolloutConfig = field(default_factory=RolloutConfig)
    reward: RewardConfig = field(default_factory=RewardConfig)
    algo: AlgoConfig = field(default_factory=AlgoConfig)
    optim: OptimConfig = field(default_factory=OptimConfig)
    run: RunConfig = field(default_factory=RunConfig)
    log: LogConfig = field(default_factory=LogConfig)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    def public_dict(self) -> dict:
        """to_dict() with secrets redacted: what is written to disk or sent to loggers."""
        from botgrpo_cli.redact import redact

        return redact(self.to_dict())

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.public_dict(), sort_keys=False)

    def save(self, path: Path) -> None:
        path.write_text(self.to_yaml())


_CLASSES: dict[str, type] = typing.get_type_hints(Config)  # section name -> dataclass
_HINTS = {section: typing.get_type_hints(cls) for section, cls in _CLASSES.items()}  # resolved field types


def describe() -> str:
    """Every option with its type, default and help text (for docs and `--help`)."""
    lines = []
    for section, cls in _CLASSES.items():
        for f in dataclasses.fields(cls):
            default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
            choices = choices_of(f)
            shown = f"; one of {', '.join(choices)}" if choices else ""
            lines.append(f"{section}.{f.name} ({_type_name(_HINTS[section][f.name])}, default {default!r}): "
                         f"{f.metadata['help']}{shown}")
    return "\n".join(lines)


def _type_name(tp: Any) -> str:
    args = [a for a in typing.get_args(tp) if a is not type(None)]
    base = args[0] if args else tp
    return getattr(base, "__name__", str(base))


_KINDS = {int: "an integer", float: "a number", bool: "true or false", str: "a string", list: "a list",
          dict: "a mapping"}


def _kind(tp: Any) -> str:
    return _KINDS.get(tp, _type_name(tp))


_closest = known_hint


def _field_of(section: str, key: str) -> dataclasses.Field:
    if section not in _CLASSES:
        raise UserError(f"unknown config section {section!r}; {_closest(section, list(_CLASSES))}")
    fields = {f.name: f for f in dataclasses.fields(_CLASSES[section])}
    if key not in fields:
        raise UserError(f"unknown config key {section}.{key}; {_closest(key, list(fields))}")
    return fields[key]


def _coerce(where: str, value: Any, tp: Any) -> Any:
    """Check (and for strings from `--set`, parse) a value against the field's annotated type."""
    args = typing.get_args(tp)
    optional = type(None) in args
    base = next((a for a in args if a is not type(None)), tp)
    if value is None or (optional and isinstance(value, str) and value.lower() in ("null", "none")):
        if optional:
            return None
        raise UserError(f"{where} may not be empty; give {_kind(base)}")
    if isinstance(value, str) and base is not str:
        try:
            value = yaml.safe_load(value)
        except yaml.YAMLError as err:
            raise UserError(f"{where}: cannot parse {value!r} as {_kind(base)} ({err})") from None
    if base is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if base is float and isinstance(value, str):
        value = _float_or(value, where)
    ok = isinstance(value, base) and not (base in (int, float) and isinstance(value, bool))
    if not ok:
        raise UserError(f"{where} must be {_kind(base)}, got {value!r}")
    return value


def _float_or(value: str, where: str) -> float:
    try:
        return float(value)
    except ValueError:
        raise UserError(f"{where} must be a number, got {value!r}") from None


def _set(raw: dict, section: str, key: str, value: Any) -> None:
    f = _field_of(section, key)
    raw.setdefault(section, {})[key] = _coerce(f"{section}.{key}", value, _HINTS[section][f.name])


def _parse_set(item: str) -> tuple[str, str, str]:
    if "=" not in item:
        raise UserError(f"--set {item!r}: expected SECTION.KEY=VALUE, e.g. --set optim.lr=3e-4")
    path, value = item.split("=", 1)
    parts = path.strip().split(".")
    if len(parts) != 2:
        raise UserError(f"--set {item!r}: the key must be SECTION.KEY, e.g. algo.beta")
    return parts[0], parts[1], value


def _read_yaml(path: Path) -> dict:
    if not path.is_file():
        raise UserError(f"config file {path} not found; pass an existing YAML file or none for defaults")
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as err:
        raise UserError(f"config file {path} is not valid YAML: {err}") from None
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise UserError(f"config file {path}: expected sections (model, rollout, ...) each mapping keys to values")
    return data


def explicit_values(path: str | Path | None = None, sets: list[str] | None = None, algo: str | None = None) -> dict:
    """{section: {key: value}} of the values a YAML file, `--set` items and `--algo` give, checked and typed."""
    raw: dict[str, dict] = {}
    for section, values in (_read_yaml(Path(path)) if path else {}).items():
        for key, value in values.items():
            _set(raw, section, key, value)
    for item in sets or []:
        _set(raw, *_parse_set(item))
    if algo is not None:
        _set(raw, "algo", "name", algo)
    return raw


def from_values(raw: dict) -> Config:
    """A validated Config from {section: {key: value}} (typed values), with the preset applied."""
    cfg = Config(**{s: _CLASSES[s](**raw.get(s, {})) for s in _CLASSES})
    apply_preset(cfg.algo)
    validate(cfg)
    return cfg


def load_config(path: str | Path | None = None, sets: list[str] | None = None, algo: str | None = None) -> Config:
    """YAML file (optional) -> `--set` overrides -> `--algo` preset -> validated Config."""
    return from_values(explicit_values(path, sets, algo))


def apply_preset(algo: AlgoConfig) -> None:
    """Fill every algo field left unset (None) from the named preset."""
    from botgrpo_cli.algos import PRESETS

    if algo.name not in PRESETS:
        raise UnknownName("algorithm preset", algo.name, sorted(PRESETS))
    p = PRESETS[algo.name]
    preset_values = {
        "advantage": p.advantage, "advantage_options": dict(p.advantage_options), "loss": p.loss,
        "loss_agg": p.loss_agg, "loss_options": dict(p.loss_options), "dynamic_sampling": p.dynamic_sampling,
        "overlong_shaping": p.overlong_shaping, "mini_batches": p.mini_batches,
    }
    for key, value in preset_values.items():
        if getattr(algo, key) is None:
            setattr(algo, key, value)


_POSITIVE = ["rollout.group_size", "rollout.prompts_per_step", "rollout.vllm_tensor_parallel_size", "algo.max_rounds", "algo.mini_batches", "algo.epochs", "optim.micro_batch_size",
             "run.keep_last", "run.eval_prompts", "log.every", "optim.lr", "reward.workers", "reward.deadline_ms"]
_NON_NEGATIVE = ["run.steps", "run.save_every", "run.eval_every", "log.samples_every", "optim.warmup_steps",
                 "optim.grad_clip", "algo.beta", "algo.entropy_coef", "model.lora_r",
                 "optim.weight_decay", "algo.overlong_cache", "run.threads", "rollout.temperature"]


def validate(cfg: Config) -> None:
    """Range and choice checks; each message names the field, its meaning and the fix."""
    def get(dotted: str) -> Any:
        section, key = dotted.split(".")
        return getattr(getattr(cfg, section), key)

    def fail(dotted: str, problem: str) -> None:
        section, key = dotted.split(".")
        help_text = _field_of(section, key).metadata["help"]
        raise UserError(f"{dotted} {problem} ({help_text})")

    for dotted in _POSITIVE:
        if get(dotted) <= 0:
            fail(dotted, f"must be > 0, got {get(dotted)}")
    for dotted in _NON_NEGATIVE:
        if get(dotted) < 0:
            fail(dotted, f"must be >= 0, got {get(dotted)}")
    for section, cls in _CLASSES.items():
        for f in dataclasses.fields(cls):
            choices, value = choices_of(f), getattr(getattr(cfg, section), f.name)
            if choices and value is not None and value not in choices:
                fail(f"{section}.{f.name}", f"must be one of {', '.join(choices)}; got {value!r}"
                     + (f" (did you mean {', '.join(near)}?)" if (near := closest(str(value), choices)) else ""))
    _check_algo_options(cfg, fail)
    if not 0 < cfg.rollout.top_p <= 1:
        fail("rollout.top_p", f"must be in (0, 1], got {cfg.rollout.top_p}")
    if cfg.rollout.max_new_tokens is not None and cfg.rollout.max_new_tokens <= 0:
        fail("rollout.max_new_tokens", "must be > 0")
    if len(cfg.optim.betas) != 2 or not all(0 <= b < 1 for b in cfg.optim.betas):
        fail("optim.betas", f"must be two numbers in [0, 1), got {cfg.optim.betas}")
    if not 0 < cfg.rollout.vllm_gpu_memory_utilization <= 1:
        fail("rollout.vllm_gpu_memory_utilization", f"must be in (0, 1], got {cfg.rollout.vllm_gpu_memory_utilization}")
    if cfg.rollout.vllm_dtype not in (None, "float32", "bfloat16", "float16"):
        fail("rollout.vllm_dtype", f"must be float32, bfloat16 or float16, got {cfg.rollout.vllm_dtype!r}")
    _check_reward_options(cfg, fail)
    if cfg.reward.services:
        _check_services(cfg.reward, fail)
    if cfg.run.distributed == "fsdp" and cfg.rollout.engine != "vllm":
        fail("run.distributed", "is fsdp, which needs rollout.engine=vllm: HF generate cannot sample sharded weights")
    if cfg.run.distributed == "fsdp" and cfg.algo.dynamic_sampling:
        fail("run.distributed", "is fsdp, which needs algo.dynamic_sampling=false (sharded forwards need equal shares)")


def _check_algo_options(cfg: Config, fail: Any) -> None:
    """Estimator and loss options against the registered functions' signatures (tensors first)."""
    from botgrpo_cli.algos import ADVANTAGES, LOSSES

    for dotted, registry, name, options in (("algo.advantage_options", ADVANTAGES, cfg.algo.advantage,
                                             cfg.algo.advantage_options), ("algo.loss_options", LOSSES,
                                             cfg.algo.loss, cfg.algo.loss_options)):
        try:
            registry.check_options(name, options or {}, positional=4)
        except UnknownName as err:
            fail(dotted, str(err))


def _check_reward_options(cfg: Config, fail: Any) -> None:
    from botgrpo_rewards.protocol import server_setting

    bad = server_setting(cfg.reward.options)
    if bad is not None:
        fail("reward.options", f"sets {bad!r}, a URL, secret or server path, which reward services refuse in "
                               "requests; make it the service's own setting instead (its environment, e.g. "
                               "BOTGRPO_VLM_BASE_URL / BOTGRPO_VLM_API_KEY for render)")


def _check_services(reward: RewardConfig, fail: Any) -> None:
    from botgrpo_cli.reward_client.combined import parse_services
    from botgrpo_rewards.protocol import server_setting
    from botgrpo_rewards.registry import SERVICES

    if reward.service is not None or reward.command is not None:
        fail("reward.services", "replaces reward.service and reward.command: list the main service first in "
                                "reward.services (with its command there) and leave those two unset")
    try:
        specs = parse_services(reward.services)
    except ValueError as err:
        fail("reward.services", f"entry {err}")
    for spec in specs:
        if spec.command is None and spec.name not in SERVICES:
            fail("reward.services", f"names unknown service {spec.name!r}; known: {', '.join(sorted(SERVICES))} "
                                    f"(or give its command)")
        bad = server_setting(spec.options)
        if bad is not None:
            fail("reward.services", f"{spec.name}.options sets {bad!r}, a URL, secret or server path, which reward "
                                    "services refuse in requests; make it the service's own setting instead")
