"""Judge model A's completions against model B's on the same prompts, pair by pair.

Pair j of a problem is A's sample j against B's sample j. Judges:
- `similarity` / `vlm` (React tasks): the render service's pairwise mode, which asks its judge in
  both orders (a flipped verdict is a tie). Only pairs where both components rendered go to the
  judge; a rendered one beats one that did not render, and two that did not render tie. A pair
  with a failed render pass or a failed judgement is undecided: counted, left out of the rate.
- `score`: the higher task score wins (any task; see winrate.score_outcome).
"""

from __future__ import annotations

import os
from concurrent.futures import Future
from typing import Any

from botgrpo_cli.algos.metrics import passes
from botgrpo_cli.evaluation.results import Problem, Sample
from botgrpo_cli.evaluation.winrate import score_outcome
from botgrpo_rewards.protocol import ScoreRequest

JUDGES = ("auto", "score", "similarity", "vlm")
VLM_ENV = ("BOTGRPO_VLM_BASE_URL", "BOTGRPO_VLM_MODEL")


def choose_judge(requested: str, can_render: bool) -> str:
    """'auto': the VLM judge when its server is configured (BOTGRPO_VLM_*), else the similarity
    judge, for React tasks with rendering on; the score judge otherwise."""
    if requested != "auto":
        return requested
    if not can_render:
        return "score"
    return "vlm" if all(os.environ.get(k) for k in VLM_ENV) else "similarity"


def _rendered(sample: Sample) -> bool | None:
    """Whether the component rendered; None when the render pass failed (nothing is known)."""
    value = sample.metrics.get("rendered")
    return None if value is None else passes(value)


def _pair_request(rid: str, a: Sample, b: Sample, example: Any, judge: str, deadline_ms: int) -> ScoreRequest:
    reference = {**example.reference, "other_completion": b.text}  # the service reads its code as it reads A's
    return ScoreRequest(id=rid, completion=a.text, prompt=example.prompt, reference=reference,
                        options={"judge": judge, "mode": "pairwise"}, deadline_ms=deadline_ms)


def _settled(sa: Sample, sb: Sample, judge: str) -> float | None | str:
    """A pair's outcome without asking the render judge; "ask" when it must; None when undecided."""
    if judge == "score":
        return score_outcome(sa.score, sb.score)
    shown_a, shown_b = _rendered(sa), _rendered(sb)
    if shown_a is None or shown_b is None:
        return None
    if shown_a and shown_b:
        return "ask"
    return 0.5 if shown_a == shown_b else float(shown_a)


def judge_pairs(a: list[Problem], b: list[Problem], examples: list, judge: str, render_pool: Any = None,
                deadline_ms: int = 60_000) -> tuple[list[list[float]], int]:
    """Per-problem pair outcomes in pair order (A's view: 1, 0.5, 0) and the number of undecided
    pairs (render or judge failures; left out of the outcomes and reported)."""
    slots: list[list[float | None | Future]] = []
    for p, (pa, pb) in enumerate(zip(a, b)):
        row: list[float | None | Future] = []
        for j, (sa, sb) in enumerate(zip(pa.samples, pb.samples)):
            outcome = _settled(sa, sb, judge)
            if outcome == "ask":
                outcome = render_pool.submit(_pair_request(f"pair-p{p:05d}-s{j:03d}", sa, sb, examples[p], judge,
                                                           deadline_ms))
            row.append(outcome)
        slots.append(row)
    outcomes = [[_judged(x) for x in row] for row in slots]
    undecided = sum(x is None for row in outcomes for x in row)
    return [[x for x in row if x is not None] for row in outcomes], undecided


def _judged(slot: float | None | Future) -> float | None:
    if not isinstance(slot, Future):
        return slot
    resp = slot.result()  # the judge's raw pair outcome (the score adds the render service's rendered floor)
    return float(resp.metrics["judge"]) if resp.usable and "judge" in resp.metrics else None
