"""Sample prompts (this process's share), generate G completions each and start scoring them; DAPO dynamic sampling."""

from __future__ import annotations

import dataclasses
import hashlib
from concurrent.futures import Future
from typing import Callable

import torch
from torch import Tensor

from botgrpo_cli.algos import overlong_penalty, zero_variance_groups
from botgrpo_cli.rollout import RolloutBatch, concat
from botgrpo_cli.trainer import scoring
from botgrpo_cli.trainer.distributed import shard
from botgrpo_cli.trainer.scoring import Scored


@dataclasses.dataclass
class Rollouts:
    batch: RolloutBatch
    examples: list  # (B,) the Example each row answers
    wait: Callable[[], Scored]  # blocks until every row is scored
    rounds: int  # sampling rounds used (1 without dynamic sampling)
    seconds_generating: float = 0.0


def generation_seed(seed: int, step: int, round_: int) -> int:
    """Sampling seed of one round of one step: resuming at any step samples the same tokens."""
    return (seed * 1_000_003 + step * 1009 + round_) % (2**63)


def prompt_seed(seed: int, prompt: str) -> int:
    """Seed of one prompt's group: independent of the batch and of the process sampling it."""
    digest = int.from_bytes(hashlib.blake2b(prompt.encode(), digest_size=8).digest(), "little")
    return (seed * 1_000_003 + digest) % (2**63)


def _generate(s, prompts: list[str], params, on_done: Callable[[int, str], None]) -> RolloutBatch:
    """All groups in one engine call, or (rollout.per_prompt_seed) one call per prompt, each seeded
    from its prompt, so a row's tokens do not depend on where it is sampled."""
    g = s.cfg.rollout.group_size
    if not s.cfg.rollout.per_prompt_seed:
        return s.engine.generate(prompts, g, params, on_done=on_done)
    parts = []
    for k, prompt in enumerate(prompts):
        part = s.engine.generate([prompt], g, dataclasses.replace(params, seed=prompt_seed(params.seed, prompt)),
                                 on_done=lambda i, text, first=k * g: on_done(first + i, text))
        part.group_ids += k
        parts.append(part)
    return concat(parts, s.engine.pad_id)


def _round(s, step: int, round_: int) -> tuple[RolloutBatch, list, list]:
    """Generate one round of this process's share of the prompts; each row is sent for scoring the
    moment it ends, the rest when all are done."""
    cfg = s.cfg.rollout
    examples = shard(s.stream.take(cfg.prompts_per_step), s.dist.rank, s.dist.world)
    rows = [ex for ex in examples for _ in range(cfg.group_size)]
    params = dataclasses.replace(s.params, seed=generation_seed(s.cfg.run.seed, step, round_))
    futures: dict[int, Future] = {}
    prompts = s.prompt_texts(examples)
    options = s.request_options(prompts)

    def send(i: int, text: str) -> None:
        futures[i] = scoring.submit(s.pool, [text], [rows[i]], [options[i // cfg.group_size]],
                                    s.cfg.reward.deadline_ms, tag=f"s{step}r{round_}-{i}")[0]

    batch = _generate(s, prompts, params, send)
    for i, text in enumerate(batch.texts):
        if i not in futures:
            send(i, text)
    batch.group_ids += round_ * len(examples)
    return batch, rows, [futures[i] for i in range(len(rows))]


def shaped_scores(scored: Scored, batch: RolloutBatch, s) -> Tensor:
    """Service scores plus DAPO's overlong penalty when the preset asks for it; 0 on failed rows."""
    scores = scored.scores
    if s.cfg.algo.overlong_shaping:
        scores = scores + overlong_penalty(batch.lengths, s.params.max_new_tokens, s.cfg.algo.overlong_cache)
    return torch.where(scored.ok, scores, 0.0)


def isolate_failed(group_ids: Tensor, ok: Tensor) -> Tensor:
    """Give each failed row a group of its own so it never shifts its siblings' statistics."""
    fresh = group_ids.max() + 1 + torch.arange(len(group_ids))
    return torch.where(ok, group_ids, fresh)


def collect_rollouts(s, step: int) -> Rollouts:
    """One round normally: scoring is left running for the caller to overlap with compute.
    With dynamic sampling: keep groups whose scores vary, refill from new prompts, bounded rounds."""
    if not s.cfg.algo.dynamic_sampling:
        batch, rows, futures = _round(s, step, 0)
        return Rollouts(batch, rows, lambda: scoring.collect(futures), rounds=1)
    kept_b, kept_rows, kept_scored, n_groups = [], [], [], 0
    share = s.cfg.rollout.prompts_per_step // s.dist.world  # groups this process keeps per step
    for round_ in range(s.cfg.algo.max_rounds):
        batch, rows, futures = _round(s, step, round_)
        scored = scoring.collect(futures)
        gids = isolate_failed(batch.group_ids, scored.ok)
        keep = scored.ok & ~zero_variance_groups(shaped_scores(scored, batch, s), gids)  # (B,)
        idx = keep.nonzero().squeeze(1)
        room = share - n_groups
        idx = idx[torch.isin(batch.group_ids[idx], batch.group_ids[idx].unique()[:room])]
        if len(idx):
            kept_b.append(batch.select(idx))
            kept_rows.extend(rows[i] for i in idx.tolist())
            kept_scored.append(scoring.select(scored, idx))
            n_groups += int(batch.group_ids[idx].unique().numel())
        if not s.dist.any(n_groups < share):  # every process stops in the same round: streams stay aligned
            break
    if not kept_b:  # every group was constant: train on the last round (its advantages are all 0)
        kept_b, kept_rows, kept_scored = [batch], rows, [scored]
    joined = scoring.join(kept_scored)
    return Rollouts(concat(kept_b, s.engine.pad_id), kept_rows, lambda: joined, rounds=round_ + 1)
