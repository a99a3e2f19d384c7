"""RolloutBatch's multi-turn fields: the trained-token mask, the model turns and each row's environment
instance survive select and concat."""

from __future__ import annotations

import torch

from botgrpo_cli.rollout import RolloutBatch, concat
from botgrpo_cli.trainer.packing import used_width


def _batch(lengths: list[int], loss_mask: torch.Tensor | None = None, turns=None) -> RolloutBatch:
    t = max(lengths)
    mask = torch.arange(t)[None, :] < torch.tensor(lengths)[:, None]
    return RolloutBatch(prompt_ids=[[1]] * len(lengths), completion_ids=torch.ones(len(lengths), t, dtype=torch.long),
                        mask=mask, texts=["x" * n for n in lengths],
                        offsets=[[(k, k + 1) for k in range(n)] for n in lengths],
                        group_ids=torch.zeros(len(lengths), dtype=torch.long),
                        finished=torch.ones(len(lengths), dtype=torch.bool), prompts=["p"] * len(lengths),
                        loss_mask=loss_mask, turns=turns)


def test_trained_is_the_loss_mask_within_the_mask_and_the_mask_without_one():
    single = _batch([3, 1])
    assert torch.equal(single.trained, single.mask)
    loss = torch.tensor([[True, False, True, True], [True, True, False, False]])
    multi = _batch([4, 1], loss, [[(0, 1), (2, 4)], [(0, 1)]])
    assert multi.trained.tolist() == [[True, False, True, True], [True, False, False, False]]


def test_select_and_concat_carry_loss_mask_and_turns():
    multi = _batch([4, 2], torch.tensor([[True, False, False, True], [True, True, False, False]]),
                   [[(0, 1), (3, 4)], [(0, 2)]])
    picked = multi.select(torch.tensor([1, 0]))
    assert picked.turns == [[(0, 2)], [(0, 1), (3, 4)]]
    assert picked.loss_mask.tolist() == [[True, True, False, False], [True, False, False, True]]
    joined = concat([_batch([5]), multi], pad_id=0)  # a single-turn part: every token trained, one turn
    assert joined.turns == [[(0, 5)], [(0, 1), (3, 4)], [(0, 2)]]
    assert joined.loss_mask.tolist() == [[True] * 5, [True, False, False, True, False], [True, True] + [False] * 3]
    assert concat([_batch([2]), _batch([1])], pad_id=0).loss_mask is None


def test_select_and_concat_keep_each_rows_environment_instance():
    a, b, c = object(), object(), object()
    with_envs = _batch([2, 1])
    with_envs.environments = [a, b]
    assert with_envs.select(torch.tensor([1, 0])).environments == [b, a]
    other = _batch([1])
    other.environments = [c]
    assert concat([with_envs, other], pad_id=0).environments == [a, b, c]
    assert concat([_batch([1]), with_envs], pad_id=0).environments == [None, a, b]  # a part without: None rows
    assert concat([_batch([1]), _batch([2])], pad_id=0).environments is None


def test_used_width_reaches_the_last_trained_token_past_a_hole():
    assert used_width(torch.tensor([[True, False, False, True, False], [True, False, False, False, False]])) == 4
    assert used_width(torch.zeros(2, 3, dtype=torch.bool)) == 1
