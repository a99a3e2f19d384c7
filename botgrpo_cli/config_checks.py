"""Validation of a resolved Config (config.validate calls `check`): ranges, choices read from the
registries, estimator and loss options against their signatures, reward options and services."""

from __future__ import annotations

import math

import dataclasses
from typing import TYPE_CHECKING, Any

from botgrpo_cli.config_fields import choices_of
from botgrpo_cli.errors import UnknownName, UserError, closest

if TYPE_CHECKING:  # config.py imports this module: only the type names, never a cycle at run time
    from botgrpo_cli.config import Config, RewardConfig

_POSITIVE = ["rollout.group_size", "rollout.prompts_per_step", "rollout.vllm_tensor_parallel_size", "algo.max_rounds",
             "algo.mini_batches", "algo.epochs", "optim.micro_batch_size", "run.keep_last", "run.eval_prompts",
             "log.every", "optim.lr", "reward.workers", "reward.deadline_ms", "optim.micro_batch_memory_gb",
             "rollout.thinking_budget", "rollout.max_turns", "rollout.tool_deadline_s", "rollout.tool_workers",
             "rollout.environment_deadline_s", "rollout.max_message_chars"]
_NON_NEGATIVE = ["run.steps", "run.save_every", "run.eval_every", "log.samples_every", "optim.warmup_steps",
                 "optim.grad_clip", "algo.beta", "algo.entropy_coef", "model.lora_r",
                 "optim.weight_decay", "algo.overlong_cache", "run.threads", "rollout.temperature",
                 "rollout.top_k", "rollout.tool_memory_mb", "rollout.max_staleness"]


def check(cfg: Config) -> None:
    """Range and choice checks; each message names the field, its meaning and the fix."""
    def get(dotted: str) -> Any:
        section, key = dotted.split(".")
        return getattr(getattr(cfg, section), key)

    def fail(dotted: str, problem: str) -> None:
        section, key = dotted.split(".")
        help_text = _fields(getattr(cfg, section))[key].metadata["help"]
        raise UserError(f"{dotted} {problem} ({help_text})")

    for dotted in _POSITIVE:
        if get(dotted) is not None and get(dotted) <= 0:  # None: chosen later (by model or task)
            fail(dotted, f"must be > 0, got {get(dotted)}")
    for dotted in _NON_NEGATIVE:
        if get(dotted) < 0:
            fail(dotted, f"must be >= 0, got {get(dotted)}")
    for section in _fields(cfg):
        for f in _fields(getattr(cfg, section)).values():
            choices, value = choices_of(f), getattr(getattr(cfg, section), f.name)
            if choices and value is not None and value not in choices:
                fail(f"{section}.{f.name}", f"must be one of {', '.join(choices)}; got {value!r}"
                     + (f" (did you mean {', '.join(near)}?)" if (near := closest(str(value), choices)) else ""))
    _check_algo_options(cfg, fail)
    _check_controls(cfg)
    if not 0 < cfg.rollout.top_p <= 1:
        fail("rollout.top_p", f"must be in (0, 1], got {cfg.rollout.top_p}")
    if not 0 <= cfg.rollout.min_p <= 1:
        fail("rollout.min_p", f"must be in [0, 1], got {cfg.rollout.min_p}")
    if cfg.rollout.repetition_penalty <= 0:
        fail("rollout.repetition_penalty", f"must be > 0, got {cfg.rollout.repetition_penalty}")
    if cfg.rollout.max_new_tokens is not None and cfg.rollout.max_new_tokens <= 0:
        fail("rollout.max_new_tokens", "must be > 0")
    if len(cfg.optim.betas) != 2 or not all(0 <= b < 1 for b in cfg.optim.betas):
        fail("optim.betas", f"must be two numbers in [0, 1), got {cfg.optim.betas}")
    if not 0 < cfg.rollout.vllm_gpu_memory_utilization <= 1:
        fail("rollout.vllm_gpu_memory_utilization", f"must be in (0, 1], got {cfg.rollout.vllm_gpu_memory_utilization}")
    if not cfg.algo.mismatch_is_max > 0 or (cfg.algo.mismatch_is_min or 0) > cfg.algo.mismatch_is_max:
        fail("algo.mismatch_is_max", f"must be > 0 and >= algo.mismatch_is_min, got {cfg.algo.mismatch_is_max}")
    _check_loss_shaping(cfg, fail)
    _check_reward_options(cfg, fail)
    _check_reward_target(cfg.reward, fail)
    if cfg.reward.services:
        _check_services(cfg.reward, fail)
    if cfg.rollout.vllm_url is not None and not cfg.rollout.vllm_url.startswith(("http://", "https://")):
        fail("rollout.vllm_url", "must be http://HOST:PORT of a `botgrpo vllm serve MODEL` server (or unset: with "
                                 "rollout.engine=vllm_server botgrpo then starts one)")
    if not cfg.rollout.vllm_server_timeout_s > 0:
        fail("rollout.vllm_server_timeout_s", f"must be > 0, got {cfg.rollout.vllm_server_timeout_s}")
    if cfg.run.distributed == "fsdp" and cfg.rollout.engine not in ("vllm", "auto"):
        fail("run.distributed", "is fsdp, which needs rollout.engine=vllm: HF generate cannot sample sharded weights")
    if cfg.run.distributed == "fsdp" and cfg.algo.dynamic_sampling:
        fail("run.distributed", "is fsdp, which needs algo.dynamic_sampling=false (sharded forwards need equal shares)")
    if cfg.rollout.max_staleness > 0:
        _check_async(cfg, fail)


def _check_async(cfg: Config, fail: Any) -> None:
    """What the producer thread cannot do beside the trainer: join collectives (a sharded policy's
    gather, tensor-parallel pushes) the training thread is joining at the same time in another
    order. Dynamic sampling under several processes is refused where the processes are known
    (trainer/session.py)."""
    if cfg.run.distributed == "fsdp":
        fail("rollout.max_staleness", "must be 0 with run.distributed=fsdp: pushing sharded weights to the engine "
                                      "gathers them across processes, which the update is doing too; use ddp")
    if cfg.rollout.vllm_tensor_parallel_size > 1:
        fail("rollout.max_staleness", "must be 0 with rollout.vllm_tensor_parallel_size > 1: a tensor-parallel push "
                                      "is a collective the update's would interleave with")


def _check_controls(cfg: Config) -> None:
    """trainer/controls.py: one line for a reference sync or adaptive entropy the run cannot honour."""
    a = cfg.algo
    if a.ref_sync_steps:
        if a.beta <= 0:
            raise UserError("algo.ref_sync_steps needs a reference model: set algo.beta > 0 (with beta 0 there is "
                            "nothing to sync), or set ref_sync_steps to 0")
        if cfg.model.lora_r:
            raise UserError("algo.ref_sync_steps with LoRA: the reference is the base weights with the adapters off, "
                            "which cannot be mixed; train all parameters (model.lora_r=0) or set ref_sync_steps to 0")
        if cfg.run.distributed == "fsdp":
            raise UserError("algo.ref_sync_steps with run.distributed=fsdp: the sharded policy cannot be mixed into "
                            "the reference copy; use ddp or set ref_sync_steps to 0")
        if not 0 <= a.ref_mixup_alpha <= 1:
            raise UserError(f"algo.ref_mixup_alpha must be in [0, 1], got {a.ref_mixup_alpha}")
    for name in ("ref_sync_steps", "entropy_coef_delta", "entropy_coef_min"):
        if getattr(a, name) < 0:
            raise UserError(f"algo.{name} must be >= 0, got {getattr(a, name)}")
    if a.entropy_target is not None and not a.entropy_coef_min <= a.entropy_coef <= a.entropy_coef_max:
        raise UserError(f"algo.entropy_coef={a.entropy_coef} must lie in [entropy_coef_min, entropy_coef_max] = "
                        f"[{a.entropy_coef_min}, {a.entropy_coef_max}] with adaptive entropy (algo.entropy_target)")


def _fields(obj: Any) -> dict[str, dataclasses.Field]:
    return {f.name: f for f in dataclasses.fields(obj)}


def _check_algo_options(cfg: Config, fail: Any) -> None:
    """Estimator and loss options against the registered functions' annotated signatures (tensors
    first): names, types and ranges; the typed values (1e-4 from YAML is a string) replace the given."""
    from botgrpo_cli.algos import ADVANTAGES, LOSSES
    from botgrpo_cli.algos.options import OptionError

    for key, registry, name in (("advantage_options", ADVANTAGES, cfg.algo.advantage),
                                ("loss_options", LOSSES, cfg.algo.loss)):
        try:
            typed = registry.check_options(name, getattr(cfg.algo, key) or {}, positional=4)
        except (UnknownName, OptionError) as err:
            raise UserError(f"algo.{key}: {err}") from None
        setattr(cfg.algo, key, typed)


def _check_loss_shaping(cfg: Config, fail: Any) -> None:
    """The batch-shaping options of docs/algorithms.md §3 (top-entropy, off-policy mask)."""
    a = cfg.algo
    if not 0 <= a.top_entropy_quantile <= 1:
        fail("algo.top_entropy_quantile", f"must be in [0, 1], got {a.top_entropy_quantile}")
    if a.off_policy_mask is not None and not a.off_policy_mask >= 0:
        fail("algo.off_policy_mask", f"must be >= 0 or unset, got {a.off_policy_mask}")
    functions = cfg.reward.function if isinstance(cfg.reward.function, list) else [cfg.reward.function]
    if a.reward_aggregation == "normalize_then_sum" and len(cfg.reward.services) < 2 and (
            cfg.reward.function is None or len(functions) < 2):
        fail("algo.reward_aggregation", "is normalize_then_sum, which normalises each reward function's scores in "
                                        "its group before the sum: it needs two or more (reward.function as a list, "
                                        "or reward.services); with one, use sum_then_normalize")


def _check_reward_options(cfg: Config, fail: Any) -> None:
    from botgrpo_cli.reward_client.span_noise import parse_span_noise
    from botgrpo_rewards.protocol import server_setting

    try:
        parse_span_noise(cfg.reward.span_noise)
    except ValueError as err:
        fail("reward.span_noise", str(err))

    bad = server_setting(cfg.reward.options)
    if bad is not None:
        fail("reward.options", f"sets {bad!r}, a URL, secret or server path, which reward services refuse in "
                               "requests; make it the service's own setting instead (its environment, e.g. "
                               "BOTGRPO_VLM_BASE_URL / BOTGRPO_VLM_API_KEY for render)")


def _check_reward_target(reward: RewardConfig, fail: Any) -> None:
    """reward.function and reward.url: one of them, well formed (a URL is checked, not yet called)."""
    from botgrpo_cli.reward_client.http import HttpRewardClient
    from botgrpo_cli.reward_client.remote import url_list

    if reward.function is not None and reward.url is not None:
        fail("reward.function", "and reward.url are both set: give one (to run a function remotely, serve it with "
                                "`botgrpo reward serve function --function ... --http HOST:PORT`)")
    if reward.function is not None:
        functions = reward.function if isinstance(reward.function, list) else [reward.function]
        bad = [f for f in functions if not (callable(f) or (isinstance(f, str) and ":" in f))]
        if bad or not functions or reward.command is not None:
            fail("reward.function", f"must be MODULE:NAME or path/to/file.py:NAME, a callable, or a non-empty list of "
                                    f"them (and reward.command unset), got {reward.function!r}")
        weights = reward.weights
        if weights is not None and (not isinstance(weights, list) or len(weights) != len(functions) or not all(
                isinstance(w, (int, float)) and not isinstance(w, bool) and math.isfinite(w) for w in weights)):
            fail("reward.weights", f"must be {len(functions)} finite number(s), one per reward.function, "
                                   f"got {weights!r}")
    elif reward.weights is not None:
        fail("reward.weights", "weighs the reward.function entries; set reward.function (reward.services takes a "
                               "weight per entry)")
    if isinstance(reward.function_memory_mb, bool) or reward.function_memory_mb < 0:
        fail("reward.function_memory_mb", f"must be a number of MB >= 0 (0 = no bound), "
                                          f"got {reward.function_memory_mb!r}")
    if reward.url is not None:
        try:
            for url in url_list(reward.url) or [""]:
                HttpRewardClient(url)
        except UserError as err:
            fail("reward.url", str(err))


def _check_services(reward: RewardConfig, fail: Any) -> None:
    from botgrpo_cli.reward_client.combined import parse_services
    from botgrpo_rewards.protocol import server_setting
    from botgrpo_rewards.registry import SERVICES

    if any(x is not None for x in (reward.service, reward.command, reward.function, reward.url)):
        fail("reward.services", "replaces reward.service, reward.command, reward.function and reward.url: list the "
                                "main service first in reward.services (with its command, function or url there) "
                                "and leave those unset")
    try:
        specs = parse_services(reward.services)
    except ValueError as err:
        fail("reward.services", f"entry {err}")
    for spec in specs:
        if spec.command is None and spec.function is None and spec.url is None and spec.name not in SERVICES:
            fail("reward.services", f"names unknown service {spec.name!r}; known: {', '.join(sorted(SERVICES))} "
                                    f"(or give its command)")
        bad = server_setting(spec.options)
        if bad is not None:
            fail("reward.services", f"{spec.name}.options sets {bad!r}, a URL, secret or server path, which reward "
                                    "services refuse in requests; make it the service's own setting instead")
