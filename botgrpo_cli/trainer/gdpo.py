"""algo.reward_aggregation=normalize_then_sum (GDPO; docs/algorithms.md §3): the batch's sequence scores
recombined from each reward function's own, each normalised within its group (algos.shaping)."""

from __future__ import annotations

import dataclasses
import math

import torch
from torch import Tensor

from botgrpo_cli.algos.shaping import normalize_then_sum
from botgrpo_cli.errors import UserError
from botgrpo_cli.reward_client.scored import Scored


def gdpo_scored(scored: Scored, part_weights: dict[str, float], group_ids: Tensor) -> Scored:
    """`scored` with each usable row's score replaced by GDPO's: sum_f w_f (s_f - mean_g s_f) / (std_g s_f + eps)
    over the functions that scored it (their `NAME/score` metrics). Spans, metrics and failed rows are
    left as they are. part_weights: each reward function's (or service's) name -> its weight (a pool's
    part_weights; {} for a pool with one score: UserError)."""
    if len(part_weights) < 2:
        raise UserError("algo.reward_aggregation=normalize_then_sum needs the scores of two or more reward functions "
                        "or services, and this reward gives one score; use sum_then_normalize")
    names = list(part_weights)
    per_function = torch.tensor([[float(r.metrics.get(f"{n}/score", math.nan)) if r.usable else math.nan
                                  for n in names] for r in scored.responses], dtype=torch.float32)  # (B, F)
    combined = normalize_then_sum(per_function, torch.tensor([part_weights[n] for n in names]), group_ids)
    responses = [dataclasses.replace(r, score=float(c)) if r.usable else r
                 for r, c in zip(scored.responses, combined.tolist())]
    return Scored(responses, scored.texts)
