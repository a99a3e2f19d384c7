"""A TRL 1.16 `GRPOConfig` (or a dict of its fields) as a botgrpo `Config`, field by field
(docs/from-trl.md): `Trainer(args=GRPOConfig(...))` runs a TRL script with one changed import.

Each field either maps onto a Config key with TRL's meaning, or has no counterpart. A field without
one passes when it holds what a default GRPOConfig holds (so TRL's defaults never stand in the way)
and otherwise stops with one line naming it and what to do.

TRL's batch arithmetic, in its own units: a generation batch is `per_device_train_batch_size x
processes x steps_per_generation` completions, `num_generations` per prompt; an optimizer step takes
`per_device_train_batch_size x processes x gradient_accumulation_steps` of them; `max_steps` counts
optimizer steps. Here one training step is one generation batch (`rollout.prompts_per_step` prompts)
with `algo.mini_batches x algo.epochs` optimizer steps, so `run.steps = max_steps / (mini_batches x
num_iterations)`; warm-up, logging and save intervals are converted the same way. The schedule
steps once per training step (botgrpo's rule), which is TRL's whenever one generation feeds one
optimizer step (steps_per_generation = gradient_accumulation_steps, TRL's default).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Mapping

from botgrpo_cli.config import Config
from botgrpo_cli.errors import UserError

# GRPOConfig / TrainingArguments fields with no counterpart, and what to do instead of setting them
NO_COUNTERPART = {
    "trust_remote_code": "botgrpo never runs a model's own code; use a model transformers implements",
    "router_aux_loss_coef": "mixture-of-experts router losses are not trained here; leave it unset",
    "cast_lm_head_to_fp32": "the trainer's weights are float32 (model.dtype) with bf16 autocast where chosen; drop it",
    "num_generations_eval": "evaluation samples one completion per prompt; drop it (`botgrpo eval --n` samples more)",
    "ds3_gather_for_generation": "DeepSpeed is not used (run.distributed: ddp or fsdp); drop it",
    "pad_to_multiple_of": "the engines pad themselves; drop it",
    "cache_implementation": "the engines keep their own KV cache; drop it",
    "use_transformers_continuous_batching": "generation is botgrpo's engines' (rollout.engine); drop it",
    "transformers_continuous_batching_config": "generation is botgrpo's engines' (rollout.engine); drop it",
    "use_transformers_paged": "generation is botgrpo's engines' (rollout.engine); drop it",
    "generation_kwargs": "give the sampling options as GRPOConfig fields (temperature, top_p, top_k, min_p, "
                         "repetition_penalty); others have no counterpart",
    "vllm_mode": "vllm_mode='server' talks to TRL's `trl vllm-serve`; botgrpo's is `botgrpo vllm serve` "
                 "(Config rollout.engine=vllm_server): drop vllm_mode for colocated vLLM",
    "vllm_model_impl": "vLLM's own model implementation is used; drop it",
    "vllm_structured_outputs_regex": "constrained decoding is not supported; reward the format instead",
    "shuffle_dataset": "prompts are always drawn in a seeded random order (seed); drop it",
    "log_unique_prompts": "samples.html shows every sampled completion with its prompt; drop it",
    "log_completions_hub_repo": "completions are written to the run directory (samples.html); upload that",
    "log_multimodal": "text models only; drop it",
    "fp16": "float16 mixed precision is not supported: bf16 (model.autocast) or float32",
    "push_to_hub": "checkpoints are written under output_dir; push them with huggingface-cli upload",
    "auto_find_batch_size": "memory is bounded by optim.micro_batch_memory_gb; drop it",
}
for _name in ("ref_model_mixup_alpha", "ref_model_sync_steps"):
    NO_COUNTERPART[_name] = "it takes effect with sync_ref_model=True; set that, or drop it"
for _name in ("vllm_gpu_memory_utilization", "vllm_tensor_parallel_size", "vllm_max_model_length",
              "vllm_enable_sleep_mode"):
    NO_COUNTERPART[_name] = "it takes effect with use_vllm=True (rollout.engine=vllm); set that, or drop it"
for _name in ("entropy_coef_min", "entropy_coef_max", "entropy_coef_delta", "entropy_target"):
    NO_COUNTERPART[_name] = "it takes effect with use_adaptive_entropy=True; set that, or drop it"
_VLLM_SERVER = ("vllm_server_base_url", "vllm_server_host", "vllm_server_port", "vllm_server_timeout",
                "vllm_group_port")
for _name in _VLLM_SERVER:
    NO_COUNTERPART[_name] = NO_COUNTERPART["vllm_mode"]
GENERIC = "it has no counterpart in botgrpo (docs/from-trl.md): leave it at its default"

# fields whose value says nothing about the run: who writes it where, and TrainingArguments' own bookkeeping
_IGNORED = {"logging_dir", "run_name", "resume_from_checkpoint", "overwrite_output_dir", "do_train", "do_eval",
            "do_predict", "local_rank", "remove_unused_columns", "label_names", "log_completions",
            "save_strategy", "logging_strategy", "eval_strategy", "eval_steps", "hub_model_id", "hub_token",
            "hub_private_repo", "hub_strategy", "lr_scheduler_kwargs", "save_only_model", "data_seed",
            "dataloader_num_workers", "dataloader_pin_memory", "dataloader_persistent_workers",
            "dataloader_prefetch_factor", "dataloader_drop_last", "disable_tqdm", "log_level", "log_level_replica",
            "logging_first_step", "logging_nan_inf_filter", "include_num_input_tokens_seen", "per_device_eval_batch_size",
            "ddp_find_unused_parameters", "ddp_backend", "ddp_timeout", "torch_compile_backend", "torch_compile_mode",
            "optim_args",
            "gradient_checkpointing_kwargs", "project", "trackio_space_id", "hub_revision", "skip_memory_metrics"}
_OPTIMIZERS = ("adamw_torch", "adamw_torch_fused", "adamw_hf")
KEEP_ALL = 1_000_000  # save_total_limit=None: keep every checkpoint


def is_trl_args(args: Any) -> bool:
    """Whether `args` is a TRL GRPOConfig (without importing TRL where it is not loaded already)."""
    return type(args).__name__ == "GRPOConfig" and type(args).__module__.startswith("trl")


def trl_config(args: Any) -> Any:
    """A GRPOConfig as given, or one built from a dict of its fields (TRL resolves its derived fields)."""
    if not isinstance(args, Mapping):
        return args
    try:
        from trl import GRPOConfig
    except ImportError:
        raise UserError("args as a dict of GRPOConfig fields needs TRL: pip install 'trl>=1.16,<1.17'") from None
    known = {f.name for f in dataclasses.fields(GRPOConfig)}
    unknown = sorted(set(args) - known)
    if unknown:
        raise UserError(f"args: not GRPOConfig fields (TRL 1.16): {', '.join(unknown)}; give GRPOConfig's field names "
                        "or a botgrpo_cli.Config")
    try:
        return GRPOConfig(**{"output_dir": "trainer_output", **args})
    except (TypeError, ValueError) as err:
        raise UserError(f"args: GRPOConfig refuses these fields: {err}") from None


def from_trl(args: Any, rows: int | None = None) -> Config:
    """The Config a GRPOConfig (or a dict of its fields) means. `rows`: the training dataset's length
    (TRL's max_steps=-1 trains num_train_epochs over it); None where it is not known."""
    import torch
    from trl import GRPOConfig

    from botgrpo_cli.algos.trl_loss_types import algo_fields

    a = trl_config(args)
    baseline = GRPOConfig(output_dir=a.output_dir, use_cpu=a.use_cpu)
    cfg = Config()
    cfg.algo.name = "grpo"  # TRL's group advantage (s - mean) / (std + 1e-4); the loss fields below refine it
    used: set[str] = set()

    def take(*names: str) -> Any:
        used.update(names)
        values = [getattr(a, n) for n in names]
        return values[0] if len(names) == 1 else values

    # the batch
    group, per_device, accumulation, per_generation, generation_batch = take(
        "num_generations", "per_device_train_batch_size", "gradient_accumulation_steps", "steps_per_generation",
        "generation_batch_size")
    if per_generation % accumulation:
        raise UserError(f"GRPOConfig(steps_per_generation={per_generation}) is not a multiple of "
                        f"gradient_accumulation_steps={accumulation}: here each optimizer step takes whole "
                        f"generation-batch slices; make it one")
    cfg.rollout.group_size = group
    cfg.rollout.prompts_per_step = generation_batch // group
    cfg.optim.micro_batch_size = per_device
    mini_batches, epochs = per_generation // accumulation, take("num_iterations")
    cfg.algo.mini_batches, cfg.algo.epochs = mini_batches, epochs
    cfg.algo.mini_batch_split = "rows"  # TRL shuffles the generation batch before slicing it
    updates = mini_batches * epochs  # optimizer steps per training step

    # how long: TRL counts optimizer steps
    max_steps, train_epochs = take("max_steps", "num_train_epochs")
    if max_steps > 0:
        cfg.run.steps = math.ceil(max_steps / updates)
    elif rows is None:
        raise UserError("GRPOConfig(max_steps=-1) trains num_train_epochs over the dataset, whose length is not known "
                        "here (a stream, a file or a Hub id): set max_steps")
    else:
        cfg.run.steps = max(1, math.ceil(train_epochs * rows / cfg.rollout.prompts_per_step))
    total_updates = cfg.run.steps * updates

    def in_steps(value: float) -> int:
        """A TRL interval (optimizer steps, or a ratio of them below 1) in training steps."""
        n = math.ceil(total_updates * value) if 0 < value < 1 else int(value)
        return max(1, round(n / updates)) if n else 0

    # generation
    r = cfg.rollout
    r.max_new_tokens = take("max_completion_length")
    r.temperature, r.top_p, r.top_k, r.repetition_penalty = take("temperature", "top_p", "top_k", "repetition_penalty")
    r.min_p = take("min_p") or 0.0
    if take("use_vllm"):
        r.engine = "vllm"
        r.vllm_gpu_memory_utilization, r.vllm_tensor_parallel_size, r.vllm_max_model_len, r.vllm_sleep_mode = take(
            "vllm_gpu_memory_utilization", "vllm_tensor_parallel_size", "vllm_max_model_length",
            "vllm_enable_sleep_mode")
    else:
        r.engine = "fast"  # TRL generates with transformers without use_vllm; fast falls back to hf where it must
    iterations = take("max_tool_calling_iterations")
    if iterations is not None:
        r.max_turns = iterations + 1  # each iteration runs the calls, then the model once more

    # the algorithm: the loss types and their options are algos.trl_loss_types'
    fields, consumed = algo_fields({f.name: getattr(a, f.name) for f in dataclasses.fields(a)})
    used.update(consumed)
    for name, value in fields.items():
        setattr(cfg.algo, name, value)
    if "beta" not in consumed:
        cfg.algo.beta = take("beta")
    if "entropy_coef" not in consumed:
        cfg.algo.entropy_coef = take("entropy_coef")
    # importance sampling against vLLM's numerics: TRL applies it only to rows vLLM sampled
    correct, mode, high, low = take("vllm_importance_sampling_correction", "vllm_importance_sampling_mode",
                                    "vllm_importance_sampling_clip_max", "vllm_importance_sampling_clip_min")
    used.add("vllm_importance_sampling_cap")  # TRL's deprecated name: GRPOConfig copied it to clip_max
    cfg.algo.mismatch_is, cfg.algo.mismatch_is_min = (mode, low) if correct and a.use_vllm else ("off", None)
    cfg.algo.mismatch_is_max = high
    if take("sync_ref_model"):
        cfg.algo.ref_sync_steps, cfg.algo.ref_mixup_alpha = take("ref_model_sync_steps", "ref_model_mixup_alpha")
    if take("use_adaptive_entropy"):
        g = cfg.algo
        g.entropy_target, g.entropy_coef_min, g.entropy_coef_max, g.entropy_coef_delta = take(
            "entropy_target", "entropy_coef_min", "entropy_coef_max", "entropy_coef_delta")
    weights = take("reward_weights")
    cfg.reward.weights = None if weights is None else [float(w) for w in weights]

    # the optimizer and its schedule
    o = cfg.optim
    o.lr, o.weight_decay, o.grad_clip = take("learning_rate", "weight_decay", "max_grad_norm")
    o.betas = [float(x) for x in take("adam_beta1", "adam_beta2")]
    o.lr_scheduler = getattr(take("lr_scheduler_type"), "value", a.lr_scheduler_type)
    o.lr_scheduler_options = dict(a.lr_scheduler_kwargs or {})
    o.warmup_steps = in_steps(take("warmup_steps"))
    optimizer = getattr(take("optim"), "value", a.optim)
    if optimizer not in _OPTIMIZERS:
        raise UserError(f"GRPOConfig(optim={optimizer!r}): the optimizer here is AdamW (optim: {', '.join(_OPTIMIZERS)}); "
                        "use one of those")
    if take("adam_epsilon") != 1e-8:
        raise UserError(f"GRPOConfig(adam_epsilon={a.adam_epsilon}): AdamW's epsilon is fixed at 1e-8 here; drop it")

    # the model, the machine and the precision
    cfg.model.gradient_checkpointing = take("gradient_checkpointing")
    cfg.model.disable_dropout = take("disable_dropout")
    cfg.model.autocast = "auto" if take("bf16") else "off"  # auto: bf16 where this hardware runs it fast
    kwargs = dict(take("model_init_kwargs") or {})
    dtype = kwargs.pop("dtype", kwargs.pop("torch_dtype", None))
    if dtype not in (None, "auto"):
        cfg.model.dtype = str(dtype).replace("torch.", "")
    if kwargs:
        raise UserError(f"GRPOConfig(model_init_kwargs={{{', '.join(map(repr, kwargs))}: ...}}): only the dtype has a "
                        "counterpart here (model.dtype); drop the others")
    if take("use_cpu") and torch.cuda.is_available():
        raise UserError("GRPOConfig(use_cpu=True): botgrpo trains on the GPU when it sees one; hide it to train on the "
                        "CPU: CUDA_VISIBLE_DEVICES= python your_script.py")
    cfg.run.seed = take("seed")
    cfg.run.chat_template_kwargs = dict(take("chat_template_kwargs") or {})

    # output and logging
    cfg.run.out_dir = take("output_dir")
    cfg.log.every = in_steps(take("logging_steps")) or 1
    strategy = getattr(a.save_strategy, "value", a.save_strategy)
    # an epoch: one pass over the dataset's prompts (whatever max_steps is); a stream's is the whole run
    epoch = cfg.run.steps if rows is None else math.ceil(rows / cfg.rollout.prompts_per_step)
    cfg.run.save_every = 0 if strategy == "no" else in_steps(take("save_steps")) if strategy == "steps" else \
        max(1, epoch)
    limit = take("save_total_limit")
    cfg.run.keep_last = KEEP_ALL if limit is None else limit
    reporters = set(take("report_to") or [])
    unknown = reporters - {"tensorboard", "wandb", "none"}
    if unknown:
        raise UserError(f"GRPOConfig(report_to={sorted(unknown)}): botgrpo reports to tensorboard and wandb (and "
                        "metrics.jsonl always); drop the others")
    cfg.log.tensorboard, cfg.log.wandb = "tensorboard" in reporters, "wandb" in reporters
    cfg.log.samples = take("num_completions_to_print") or cfg.log.samples
    eval_strategy = getattr(a.eval_strategy, "value", a.eval_strategy)
    if eval_strategy == "steps":
        cfg.run.eval_every = in_steps(a.eval_steps or a.logging_steps)
    elif eval_strategy == "epoch":
        cfg.run.eval_every = max(1, epoch)

    _refuse_the_rest(a, baseline, used)
    return cfg


def _refuse_the_rest(a: Any, baseline: Any, used: set[str]) -> None:
    """One line for every field not mapped that differs from a default GRPOConfig's."""
    changed = [f.name for f in dataclasses.fields(a) if f.name not in used and f.name not in _IGNORED
               and getattr(a, f.name) != getattr(baseline, f.name)]
    if changed:
        raise UserError("; ".join(f"GRPOConfig({name}={getattr(a, name)!r}): {NO_COUNTERPART.get(name, GENERIC)}"
                                  for name in changed))
