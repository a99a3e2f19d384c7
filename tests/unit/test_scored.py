"""The one path from reward responses to token rewards (reward_client/scored.py), shared by the
trainer, the evaluation and the TRL/verl adapters."""

from __future__ import annotations

from concurrent.futures import Future

import pytest
import torch

from botgrpo_cli.reward_client.scored import Scored, collect, offsets_mask, to_token_rewards
from botgrpo_rewards.protocol import ScoreResponse, Span


def _ok(score, spans=(), **metrics):
    return ScoreResponse(id="x", status="ok", score=score, spans=list(spans), metrics=metrics)


def test_usable_means_ok_and_a_score():
    assert _ok(0.5).usable
    assert not _ok(None, correct=1.0).usable  # ok without a score is a failed row
    assert not ScoreResponse(id="x", status="timeout").usable


def test_failed_rows_are_zero_masked_and_leave_the_metrics():
    scored = Scored([_ok(1.0, [Span(0, 1, -1.0)], correct=1.0), _ok(None, correct=1.0),
                     ScoreResponse(id="x", status="error")])
    assert scored.ok.tolist() == [True, False, False]
    assert scored.scores.tolist() == [1.0, 0.0, 0.0]
    assert scored.spans == [[(0, 1, -1.0)], [], []]
    assert scored.metrics == {"correct": [1.0]}
    assert scored.masked == 2
    assert scored.values == [1.0, None, None]


def test_select_and_join_keep_the_one_rule():
    # the trainer's old select() read metrics of every status-ok row, so an ok row without a score
    # came back into the metrics after dynamic sampling; now every view derives from `usable`
    scored = Scored([_ok(None, correct=1.0), _ok(0.0, correct=0.0), _ok(1.0, correct=1.0)], ["a", "b", "c"])
    picked = scored.select(torch.tensor([2, 0]))
    assert picked.texts == ["c", "a"] and picked.ok.tolist() == [True, False]
    assert picked.metrics == {"correct": [1.0]}
    joined = Scored.join([picked, scored.select(torch.tensor([1]))])
    assert joined.texts == ["c", "a", "b"] and joined.metrics == {"correct": [1.0, 0.0]}
    assert joined.scores.tolist() == [1.0, 0.0, 0.0]


def test_collect_turns_an_exception_into_a_counted_error_row():
    good, bad = Future(), Future()
    good.set_result(_ok(1.0))
    bad.set_exception(RuntimeError("boom"))
    scored = collect([good, bad], ["x", "y"])
    assert scored.ok.tolist() == [True, False] and scored.responses[1].status == "error"
    assert "boom" in scored.responses[1].info["exception"]


def test_token_rewards_worked_by_hand():
    # row 0: score 0.5, span [2, 4) reward -1 over tokens (0,2) (2,3) (3,6): rho = 0, -1, -1/3
    # row 1: timed out -> all zero and masked; shaping only reaches ok rows
    scored = Scored([_ok(0.5, [Span(2, 4, -1.0)]), ScoreResponse(id="y", status="timeout")])
    offsets = [[(0, 2), (2, 3), (3, 6)], [(0, 1)]]
    tr = to_token_rewards(scored, offsets, lambda_seq=1.0, lambda_tok=0.5, shaping=torch.tensor([-0.25, -1.0]))
    assert tr.ok.tolist() == [True, False]
    assert tr.scores.tolist() == [0.25, 0.0]
    assert tr.mask.tolist() == [[True, True, True], [False, False, False]]
    assert tr.rho[0].tolist() == pytest.approx([0.0, -1.0, -1 / 3])
    assert tr.r[0].tolist() == pytest.approx([0.25, 0.25 - 0.5, 0.25 - 0.5 / 3])
    assert tr.r[1].tolist() == [0.0, 0.0, 0.0]


def test_given_mask_is_respected_and_wider_than_offsets():
    scored = Scored([_ok(1.0), _ok(-1.0)])
    mask = torch.tensor([[1, 1, 0, 0], [1, 0, 0, 0]])
    tr = to_token_rewards(scored, [[(0, 1), (1, 2)], [(0, 1)]], mask)
    assert tr.r.tolist() == [[1.0, 1.0, 0.0, 0.0], [-1.0, 0.0, 0.0, 0.0]]
    assert offsets_mask([[(0, 1)], [], [(0, 1), (1, 2)]]).tolist() == [[True, False], [False, False], [True, True]]


def test_a_reward_that_is_not_finite_is_masked_and_counted_whatever_its_door():
    # an environment's reward, a TRL adapter's, a service's: one check where rows enter the batch
    scored = Scored([_ok(float("nan")), _ok(0.5, [Span(0, 1, float("inf"))]), _ok(0.5, m=float("-inf")),
                     _ok(1.0), ScoreResponse(id="x", status="error")])
    assert scored.ok.tolist() == [False, False, False, True, False]
    assert scored.masked == 4
    assert torch.isfinite(scored.scores).all() and scored.spans[1] == []
    assert "score must be a finite number, got nan" in scored.responses[0].error.message
    r = to_token_rewards(scored, [[(0, 1), (1, 2)]] * 5)
    assert torch.isfinite(r.r).all() and r.ok.tolist() == [False, False, False, True, False]
