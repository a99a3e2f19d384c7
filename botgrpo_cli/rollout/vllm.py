"""Rollouts with vLLM colocated on the trainer's GPU (optional extra `botgrpo[vllm]`, vLLM 0.33).

NOT YET RUN ON A GPU: written against vLLM 0.33.0's source (LLM, apply_model, sleep/wake_up,
logprobs_mode); tests/gpu/test_vllm_engine.py and scripts/gpu_check.sh exercise it on a CUDA machine.

Layout: every training process owns one vLLM engine on its own GPU. With one training process the
engine core runs inside it (VLLM_ENABLE_V1_MULTIPROCESSING=0), so `sync_weights()` hands the
trainer's tensors to vLLM's `model.load_weights` by reference. Under several training processes the
engine uses vLLM's `external_launcher` backend: each rank is one vLLM worker, consecutive ranks form
tensor-parallel groups, and every rank of a group submits the group's prompts (gathered first).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import torch

from botgrpo_cli.config import RolloutConfig
from botgrpo_cli.errors import UserError
from botgrpo_cli.rollout.base import RolloutBatch, SamplingParams, eos_ids, finish_row, pad_id_of
from botgrpo_cli.rollout.offsets import OffsetDecoder
from botgrpo_cli.rollout.seeds import mix_seed, text_digest


_DEFAULTS = RolloutConfig()  # the options' meanings and defaults live in config.py (rollout.vllm_*)


@dataclass(frozen=True)
class VLLMOptions:
    """The engine's share of the rollout.vllm_* options (see `botgrpo train --list-options`)."""

    gpu_memory_utilization: float = _DEFAULTS.vllm_gpu_memory_utilization
    tensor_parallel_size: int = _DEFAULTS.vllm_tensor_parallel_size
    sleep_mode: bool = _DEFAULTS.vllm_sleep_mode
    max_model_len: int | None = _DEFAULTS.vllm_max_model_len
    dtype: str = "auto"  # vLLM's weight dtype; "auto" = the checkpoint's (the config's None = model.dtype)
    enforce_eager: bool = _DEFAULTS.vllm_enforce_eager

    @classmethod
    def from_config(cls, rollout: RolloutConfig, model_dtype: str) -> "VLLMOptions":
        return cls(gpu_memory_utilization=rollout.vllm_gpu_memory_utilization,
                   tensor_parallel_size=rollout.vllm_tensor_parallel_size, sleep_mode=rollout.vllm_sleep_mode,
                   max_model_len=rollout.vllm_max_model_len, dtype=rollout.vllm_dtype or model_dtype,
                   enforce_eager=rollout.vllm_enforce_eager)


def row_seed(seed: int, prompt: str, k: int) -> int:
    """Sampling seed of the k-th completion of `prompt`: a row's tokens depend on the call's seed,
    its prompt and k, never on the batch around it or the rank that generates it."""
    return mix_seed(seed, text_digest(prompt) + k * 7919, modulus=2**31 - 1)  # vLLM takes 31-bit seeds


def policy_weights(model: Any) -> Iterator[tuple[str, torch.Tensor]]:
    """(HF checkpoint name, full tensor) for every parameter of the trainer's policy.
    LoRA adapters must be merged by the caller; FSDP shards (DTensors) are gathered here, which is
    a collective: every rank iterates in the same order."""
    inner = getattr(model, "module", model)  # DDP wrapper
    for name, param in inner.named_parameters():
        if "lora_" in name:
            continue
        name = name.removeprefix("base_model.model.").replace(".base_layer.", ".")
        tensor = param.detach()
        if hasattr(tensor, "full_tensor"):
            tensor = tensor.full_tensor()
        yield name, tensor


class VLLMEngine:
    """Engine protocol over a vLLM `LLM`; `sync_weights()` after each optimizer step."""

    def __init__(self, model: Any, tokenizer: Any, model_path: str, options: VLLMOptions, seed: int = 0):
        try:
            from vllm import LLM
        except ImportError:
            raise UserError("rollout.engine=vllm needs vLLM: pip install 'botgrpo[vllm]' on a CUDA machine "
                            "(or use rollout.engine=hf)") from None
        self.model, self.tok, self.options = model, tokenizer, options
        self.decoder = OffsetDecoder(tokenizer)
        self.eos_ids = eos_ids(model, tokenizer)  # the HF engine's rules, so both stop and pad alike
        self.pad_id = pad_id_of(tokenizer, self.eos_ids)
        self.tp_group, launch = _placement(options.tensor_parallel_size)
        self.llm = LLM(model=model_path, tokenizer=model_path, tensor_parallel_size=options.tensor_parallel_size,
                       gpu_memory_utilization=options.gpu_memory_utilization, enable_sleep_mode=options.sleep_mode,
                       max_model_len=options.max_model_len, dtype=options.dtype, seed=seed,
                       enforce_eager=options.enforce_eager,
                       logprobs_mode="processed_logprobs",  # log-probs after temperature, as the trainer computes them
                       **launch)
        self.asleep = False
        if options.sleep_mode:
            self._sleep()

    def sync_weights(self) -> None:
        """Copy the trainer's current weights into vLLM and drop KV blocks cached under the old ones."""
        if self.asleep:
            self.llm.wake_up(tags=["weights"])
        merge = getattr(self.model, "merge_adapter", None)
        if merge is not None:
            merge()
        try:  # one tensor at a time: under FSDP only one gathered parameter is alive at once
            self.llm.llm_engine.apply_model(lambda vllm_model: vllm_model.load_weights(policy_weights(self.model)))
        finally:
            if merge is not None:
                self.model.unmerge_adapter()
        self.llm.reset_prefix_cache()

    def generate(self, prompts: list[str], n: int, params: SamplingParams,
                 on_done: Callable[[int, str], None] | None = None) -> RolloutBatch:
        """n completions of each prompt (rows i*n .. i*n+n-1, group id i); one vLLM request per row
        with its own seed. on_done(row, text) is called for rows ended by EOS or a stop string."""
        from vllm import SamplingParams as VSamplingParams

        prompt_ids = [self.tok(p, add_special_tokens=False)["input_ids"] for p in prompts]
        rows = [ids for ids in prompt_ids for _ in range(n)]
        seeds = [row_seed(params.seed, p, k) for p in prompts for k in range(n)]
        offset, (group_rows, group_seeds) = self._gather_group(rows, seeds)
        requests = [{"prompt_token_ids": ids} for ids in group_rows]
        sampling = [VSamplingParams(
            n=1, max_tokens=params.max_new_tokens, temperature=params.temperature, top_p=params.top_p,
            stop=list(params.stop), include_stop_str_in_output=True, stop_token_ids=self.eos_ids,
            seed=seed, logprobs=0) for seed in group_seeds]
        if self.asleep:
            self.llm.wake_up()
            self.asleep = False
        outputs = self.llm.generate(requests, sampling, use_tqdm=False)[offset: offset + len(rows)]
        if self.options.sleep_mode:
            self._sleep()
        batch = self._batch(outputs, rows, params.stop)
        batch.group_ids = torch.arange(len(prompts)).repeat_interleave(n)
        batch.prompts = [p for p in prompts for _ in range(n)]
        if on_done is not None:
            for i in batch.finished.nonzero().flatten().tolist():
                on_done(i, batch.texts[i])
        return batch

    def _batch(self, outputs: list, rows: list[list[int]], stops: tuple[str, ...]) -> RolloutBatch:
        finished_rows = []
        for out in outputs:
            sample = out.outputs[0]
            tokens, text, offsets, finished = finish_row(self.decoder, self.eos_ids, list(sample.token_ids), stops)
            logps = [sample.logprobs[k][t].logprob for k, t in enumerate(tokens)]
            finished_rows.append((tokens, text, offsets, finished, logps))
        width = max(1, max(len(r[0]) for r in finished_rows))
        completion = torch.full((len(rows), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.bool)
        logp_old = torch.zeros((len(rows), width), dtype=torch.float32)
        for i, (tokens, _text, _offsets, _finished, logps) in enumerate(finished_rows):
            completion[i, : len(tokens)] = torch.tensor(tokens, dtype=torch.long)
            mask[i, : len(tokens)] = True
            logp_old[i, : len(tokens)] = torch.tensor(logps, dtype=torch.float32)
        return RolloutBatch(
            prompt_ids=rows, completion_ids=completion, mask=mask, texts=[r[1] for r in finished_rows],
            offsets=[r[2] for r in finished_rows], group_ids=torch.zeros(len(rows), dtype=torch.long),
            finished=torch.tensor([r[3] for r in finished_rows], dtype=torch.bool), logp_old=logp_old)

    def _gather_group(self, rows: list[list[int]], seeds: list[int]) -> tuple[int, tuple[list, list]]:
        """All ranks of a tensor-parallel group must submit the same requests: gather the group's
        rows and seeds; return where this rank's rows start in them."""
        if self.tp_group is None:
            return 0, (rows, seeds)
        gathered: list[Any] = [None] * torch.distributed.get_world_size(self.tp_group)
        torch.distributed.all_gather_object(gathered, (rows, seeds), group=self.tp_group)
        me = torch.distributed.get_rank(self.tp_group)
        start = sum(len(g[0]) for g in gathered[:me])
        return start, ([r for g in gathered for r in g[0]], [s for g in gathered for s in g[1]])

    def _sleep(self) -> None:
        # Level 1: weights to CPU, KV cache dropped. Level 2 would skip that copy but also drops
        # buffers load_weights never restores (e.g. rotary caches).
        self.llm.sleep(level=1)
        self.asleep = True


def _placement(tp: int) -> tuple[Any, dict]:
    """(tensor-parallel process group or None, extra LLM arguments) for this process."""
    world = torch.distributed.get_world_size() if torch.distributed.is_initialized() else 1
    if world == 1:
        if tp > 1:
            raise UserError("rollout.vllm_tensor_parallel_size > 1 needs one training process per GPU "
                            "(botgrpo train --num-processes N with N a multiple of it)")
        os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"  # engine in this process: weights pass by reference
        return None, {}
    if world % tp:
        raise UserError(f"rollout.vllm_tensor_parallel_size={tp} must divide the number of processes ({world})")
    group = None
    if tp > 1:
        group, _ = torch.distributed.new_subgroups_by_enumeration(
            [list(range(start, start + tp)) for start in range(0, world, tp)])
    return group, {"distributed_executor_backend": "external_launcher"}

