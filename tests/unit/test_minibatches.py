"""How one rollout batch is split into optimizer steps (trainer/minibatches.py)."""

from __future__ import annotations

import pytest
import torch

from botgrpo_cli.trainer.minibatches import plan, units


def _rows(steps: list[torch.Tensor]) -> list[list[int]]:
    return [s.tolist() for s in steps]


def test_one_by_one_is_the_whole_batch_once():
    assert _rows(plan(units(torch.tensor([0, 0, 1, 1]), 4, "groups"), 1, 1)) == [[0, 1, 2, 3]]


def test_groups_stay_whole_and_are_dealt_round_robin():
    gids = torch.tensor([5, 5, 2, 2, 9, 9, 7, 7])  # ids need not be sorted, only contiguous
    assert _rows(plan(units(gids, 8, "groups"), 2, 1)) == [[0, 1, 4, 5], [2, 3, 6, 7]]


def test_rows_split_ignores_groups():
    gids = torch.tensor([0, 0, 0, 1, 1, 1])
    assert _rows(plan(units(gids, 6, "rows"), 3, 1)) == [[0, 3], [1, 4], [2, 5]]


def test_epochs_repeat_the_same_mini_batches():
    steps = _rows(plan(units(torch.tensor([0, 0, 1, 1, 2, 2]), 6, "groups"), 3, 2))
    assert steps == [[0, 1], [2, 3], [4, 5]] * 2


def test_more_mini_batches_than_groups_gives_one_group_each():
    assert _rows(plan(units(torch.tensor([0, 0, 1, 1]), 4, "groups"), 16, 1)) == [[0, 1], [2, 3]]


def test_failed_rows_stay_in_their_group_and_every_row_is_trained_once_per_epoch():
    gids = torch.tensor([0, 0, 0, 1, 1, 2, 2, 2, 2])  # uneven groups (dynamic sampling keeps whole groups)
    steps = plan(units(gids, 9, "groups"), 2, 1)
    assert sorted(torch.cat(steps).tolist()) == list(range(9))
    assert _rows(steps) == [[0, 1, 2, 5, 6, 7, 8], [3, 4]]


def test_strided_split_is_the_union_of_per_process_splits():
    """Two processes with contiguous halves (whole groups) take, together, the one-process mini-batches."""
    gids = torch.arange(8).repeat_interleave(3)  # 8 groups of 3
    whole = _rows(plan(units(gids, 24, "groups"), 4, 1))
    halves = [plan(units(gids[lo:lo + 12], 12, "groups"), 4, 1) for lo in (0, 12)]
    assert whole == [sorted(a.tolist() + (b + 12).tolist()) for a, b in zip(*halves)]


def test_bad_settings_raise():
    with pytest.raises(ValueError, match="split"):
        units(None, 3, "tokens")
    with pytest.raises(ValueError, match="at least 1"):
        plan(units(None, 3, "rows"), 0, 1)
