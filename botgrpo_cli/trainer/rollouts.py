"""Rollouts: the seeded prompt stream, this process's share of prompts, G completions each with
scoring started as each row ends, DAPO dynamic sampling, and reasoning-step boundaries on tokens.
"""

from __future__ import annotations

import dataclasses
import os
import random
from concurrent.futures import Future
from typing import Callable, Generic, TypeVar

import torch
from torch import Tensor

from botgrpo_cli.algos import isolate_failed, overlong_penalty, zero_variance_groups
from botgrpo_cli.algos.spans import shaped_scores
from botgrpo_cli.config import AlgoConfig, RolloutConfig
from botgrpo_cli.reward_client.scored import Scored, collect, score_request
from botgrpo_cli.rollout import Engine, RolloutBatch, SamplingParams, concat
from botgrpo_cli.rollout.base import OnDone
from botgrpo_cli.rollout.seeds import generation_seed, mix_seed, prompt_seed
from botgrpo_cli.rollout.turns import MultiTurn
from botgrpo_rewards.protocol import ScoreResponse
from botgrpo_cli.trainer.distributed import shard


@dataclasses.dataclass
class Rollouts:
    batch: RolloutBatch
    examples: list  # (B,) the Example each row answers
    wait: Callable[[], Scored]  # blocks until every row is scored
    rounds: int  # sampling rounds used (1 without dynamic sampling)
    seconds_generating: float = 0.0
    position: int = 0  # prompts drawn from the stream once this step's were (the checkpoint's data position)
    turn_stats: dict = dataclasses.field(default_factory=dict)  # multi-turn counts of this batch's trajectories


def _generate(engine: Engine | MultiTurn, rollout: RolloutConfig, prompts: list[str], params: SamplingParams,
              on_done: OnDone | None, examples: list | None = None) -> RolloutBatch:
    """All groups in one engine call, or (rollout.per_prompt_seed) one call per prompt, each seeded
    from its prompt, so a row's tokens do not depend on where it is sampled. A multi-turn driver
    also gets each prompt's example (an environment's reset reads it)."""
    g = rollout.group_size

    def call(part: list[str], rows: list | None, p: SamplingParams, done: Callable | None) -> RolloutBatch:
        if isinstance(engine, MultiTurn):
            return engine.generate(part, g, p, on_done=done, rows=rows)
        return engine.generate(part, g, p, on_done=done)

    if not rollout.per_prompt_seed:
        return call(prompts, examples, params, on_done)
    parts = []
    for k, prompt in enumerate(prompts):
        part = call([prompt], None if examples is None else examples[k:k + 1],
                    dataclasses.replace(params, seed=prompt_seed(params.seed, prompt)),
                    None if on_done is None else lambda i, *rest, first=k * g: on_done(first + i, *rest))
        part.group_ids += k
        parts.append(part)
    return concat(parts, engine.pad_id)


def streams_scoring(setting: str, generates_on_cpu: bool, torch_threads: int, processes: int, cores: int) -> bool:
    """Whether rows go to scoring as each ends (reward.stream). On the CPU with a torch thread per core,
    the services' work during generation takes cores from the decode loop's threads, and rows that
    end apart make small batches, each paying a checker's fixed cost: on 2 cores generation then
    slows by more than the wait for the scores shrinks (records step_react_synth_stream_* in
    research/results/bench)."""
    if setting != "auto":
        return setting == "always"
    return not generates_on_cpu or torch_threads * processes < cores


def _usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def _streams(s) -> bool:
    device = getattr(s.dist.accelerator, "device", None)
    on_cpu = s.cfg.rollout.engine not in ("vllm", "vllm_server") and (device is None or torch.device(device).type == "cpu")
    return streams_scoring(s.cfg.reward.stream, on_cpu, torch.get_num_threads(), s.dist.world, _usable_cores())


def _round(s, step: int, round_: int) -> tuple[RolloutBatch, list, list]:
    """Generate one round of this process's share of the prompts; each row is sent for scoring the
    moment it ends (unless reward.stream says otherwise), the rest when all are done."""
    cfg = s.cfg.rollout
    examples = shard(s.stream.take(cfg.prompts_per_step), s.dist.rank, s.dist.world)
    rows = [ex for ex in examples for _ in range(cfg.group_size)]
    params = dataclasses.replace(s.params, seed=generation_seed(s.cfg.run.seed, step, round_))
    futures: dict[int, Future] = {}
    prompts = s.prompt_texts(examples)
    options = s.request_options(prompts)  # per prompt: does its template open the thinking block?

    def send(i: int, text: str) -> None:
        futures[i] = s.pool.submit(score_request(f"s{step}r{round_}-{i}", text, rows[i], options[i // cfg.group_size],
                                                 s.cfg.reward.deadline_ms))

    whole = getattr(s.pool, "takes_batches", False)  # reward functions: one call per generation batch, as TRL
    if s.turns is None:
        batch = _generate(s.engine, s.cfg.rollout, prompts, params, send if _streams(s) and not whole else None)
    else:
        streams = _streams(s) and not whole

        def ended(i: int, text: str, response: ScoreResponse | None) -> None:
            if response is not None:  # the environment's own reward
                futures[i] = Future()
                futures[i].set_result(response)
            elif streams:
                send(i, text)

        batch = _generate(s.turns, s.cfg.rollout, prompts, params, ended, examples)
    if whole:
        requests = [score_request(f"s{step}r{round_}-{i}", text, rows[i], options[i // cfg.group_size],
                                  s.cfg.reward.deadline_ms) for i, text in enumerate(batch.texts)]
        by_environment = dict(futures)  # an environment's own rewards stand
        futures = {**dict(enumerate(s.pool.submit_batch(requests, trl_extras(s, step, rows, batch)))), **by_environment}
    for i, text in enumerate(batch.texts):  # rows not yet sent (all of them unless streamed)
        if i not in futures:
            send(i, text)
    batch.group_ids += round_ * len(examples)
    return batch, rows, [futures[i] for i in range(len(rows))]


def trl_extras(s, step: int, rows: list, batch: RolloutBatch) -> dict:
    """What TRL hands reward functions besides prompts, completions and columns: each row's prompt
    as messages (None where it was text), its completion's token ids, the trainer's state, and with
    an environment each row's instance (trl_environments.with_environments)."""
    from botgrpo_cli.trl_environments import with_environments

    ids = [row[keep].tolist() for row, keep in zip(batch.completion_ids, batch.mask)]
    epoch = s.stream.position / max(1, len(s.stream.items))  # passes over the training prompts, this step's drawn
    state = {"global_step": step - 1, "max_steps": s.cfg.run.steps, "epoch": epoch}  # TRL's state during this step
    return with_environments({"messages": [s.task.messages(ex) for ex in rows], "completion_ids": ids,
                              "trainer_state": state}, batch)


def score_shaping(lengths: Tensor, algo: AlgoConfig, max_new_tokens: int) -> Tensor | None:
    """DAPO's overlong penalty (B,) for completions of `lengths` when the preset asks for it, else None."""
    if not algo.overlong_shaping:
        return None
    return overlong_penalty(lengths, max_new_tokens, algo.overlong_cache)


def collect_rollouts(s, step: int) -> Rollouts:
    """One round normally: scoring is left running for the caller to overlap with compute.
    With dynamic sampling: keep groups whose scores vary, refill from new prompts, bounded rounds."""
    if not s.cfg.algo.dynamic_sampling:
        batch, rows, futures = _round(s, step, 0)
        return Rollouts(batch, rows, lambda: collect(futures, batch.texts), rounds=1)
    kept_b, kept_rows, kept_scored, n_groups = [], [], [], 0
    share = s.cfg.rollout.prompts_per_step // s.dist.world  # groups this process keeps per step
    for round_ in range(s.cfg.algo.max_rounds):
        batch, rows, futures = _round(s, step, round_)
        scored = collect(futures, batch.texts)
        gids = isolate_failed(batch.group_ids, scored.ok)
        scores = shaped_scores(scored.scores, scored.ok, score_shaping(batch.trained.sum(1), s.cfg.algo,
                                                                       s.trained_limit))  # (B,) as r uses them
        keep = scored.ok & ~zero_variance_groups(scores, gids)  # (B,)
        idx = keep.nonzero().squeeze(1)
        room = share - n_groups
        idx = idx[torch.isin(batch.group_ids[idx], batch.group_ids[idx].unique()[:room])]
        if len(idx):
            kept_b.append(batch.select(idx))
            kept_rows.extend(rows[i] for i in idx.tolist())
            kept_scored.append(scored.select(idx))
            n_groups += int(batch.group_ids[idx].unique().numel())
        if not s.dist.any(n_groups < share):  # every process stops in the same round: streams stay aligned
            break
    if not kept_b:  # every group was constant: train on the last round (its advantages are all 0)
        kept_b, kept_rows, kept_scored = [batch], rows, [scored]
    joined = Scored.join(kept_scored)
    return Rollouts(concat(kept_b, s.engine.pad_id), kept_rows, lambda: joined, rounds=round_ + 1)


T = TypeVar("T")


class PromptStream(Generic[T]):
    """Examples in a fresh seeded shuffle each epoch; `position` (items drawn) is the whole state."""

    def __init__(self, items: list[T], seed: int, position: int = 0):
        if not items:
            raise ValueError("the task has no training examples")
        self.items, self.seed, self.position = items, seed, position
        self._epoch, self._order = -1, []

    def _order_of(self, epoch: int) -> list[int]:
        if epoch != self._epoch:
            order = list(range(len(self.items)))
            random.Random(mix_seed(self.seed, epoch, modulus=None)).shuffle(order)
            self._epoch, self._order = epoch, order
        return self._order

    def take(self, k: int) -> list[T]:
        out = []
        for _ in range(k):
            epoch, index = divmod(self.position, len(self.items))
            out.append(self.items[self._order_of(epoch)[index]])
            self.position += 1
        return out


def step_ends(texts: list[str], offsets: list[list[tuple[int, int]]], separator: str | None, T: int) -> Tensor:
    """(B, T) bool: True on the token holding the last character of each separator occurrence and on
    each completion's last token (the final step). Tokens with no characters never end a step."""
    ends = torch.zeros((len(texts), T), dtype=torch.bool)
    for i, (text, offs) in enumerate(zip(texts, offsets)):
        if offs:
            ends[i, len(offs) - 1] = True
        if not separator:
            continue
        boundaries = _boundaries(text, separator)
        for t, (start, end) in enumerate(offs):
            if start < end and any(start < b <= end for b in boundaries):
                ends[i, t] = True
    return ends


def _boundaries(text: str, separator: str) -> list[int]:
    """Code-point positions just after each non-overlapping occurrence of `separator`."""
    out, pos = [], text.find(separator)
    while pos >= 0:
        out.append(pos + len(separator))
        pos = text.find(separator, pos + len(separator))
    return out
