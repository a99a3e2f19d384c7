"""Loss normalisation across processes: micro-batch factors from global counts make the gradient,
summed over micro-batches and averaged over ranks as DDP does, equal the full batch's."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pytest
import torch

from botgrpo_cli.algos import policy_loss
from botgrpo_cli.algos.losses import BY_TOKENS, LOSS_AGGS
from botgrpo_cli.errors import UserError
from botgrpo_cli.trainer.distributed import (Dist, combine_metrics, fully_shard_policy, is_fsdp, loss_weights,
                                             reduce_metrics, shard)


@dataclass(frozen=True)
class Pretend(Dist):
    """A rank of `world` whose all-reduce returns the given global totals (no process group)."""

    totals: tuple[float, ...] = ()

    def sum(self, values):
        return list(self.totals)


def _loss(theta, x, adv, mask, agg):
    logp = x * theta  # (b, T) with gradient to theta
    loss, _ = policy_loss("clip", logp=logp, logp_old=logp.detach(), advantages=adv, mask=mask, loss_agg=agg,
                          max_completion_length=7)
    return loss


@pytest.mark.parametrize("agg", [a for a in LOSS_AGGS if a != "bnpo"])  # bnpo depends on the split: below
def test_two_ranks_with_uneven_micro_batches_equal_one_process(agg):
    g = torch.Generator().manual_seed(0)
    B, T = 10, 7
    x, adv = torch.randn(B, T, generator=g), torch.randn(B, T, generator=g)
    lengths = torch.randint(1, T + 1, (B,), generator=g)
    mask = torch.arange(T)[None, :] < lengths[:, None]  # (B, T) ranks get different token counts
    theta = torch.zeros(T, requires_grad=True)
    full = torch.autograd.grad(_loss(theta, x, adv, mask, agg), theta)[0]

    ranks = [slice(0, 6), slice(6, 10)]  # 6 and 4 rows (dynamic sampling can leave shares uneven)
    micro = 4
    count = (lambda m: float(m.sum())) if agg in BY_TOKENS else (lambda m: float(m.shape[0]))
    total = count(mask)
    averaged = torch.zeros(T)
    for rows in ranks:
        xs, advs, masks = x[rows], adv[rows], mask[rows]
        mbs = [slice(lo, lo + micro) for lo in range(0, masks.shape[0], micro)]
        weights = loss_weights(agg, [masks[s] for s in mbs], Pretend(rank=0, world=2, totals=(total,)))
        grad = sum(torch.autograd.grad(_loss(theta, xs[s], advs[s], masks[s], agg) * w, theta)[0]
                   for s, w in zip(mbs, weights))
        averaged += grad / len(ranks)  # DDP averages gradients over processes
    torch.testing.assert_close(averaged, full, rtol=1e-5, atol=1e-7)


def test_bnpo_averages_each_micro_batch_token_mean_as_trl():
    """TRL's bnpo: each micro-batch's own token mean, averaged over accumulation steps (and by DDP over
    processes), so a micro-batch with few tokens weighs as much as one with many."""
    mask = torch.tensor([[1, 1, 0], [1, 0, 0], [1, 1, 1]], dtype=torch.bool)
    assert loss_weights("bnpo", [mask[:2], mask[2:]], Dist()) == pytest.approx([1 / 2, 1 / 2])
    assert loss_weights("bnpo", [mask], Pretend(rank=0, world=2, totals=(6.0,))) == pytest.approx([1.0])


def test_one_process_weights_are_the_micro_batch_shares():
    mask = torch.tensor([[1, 1, 0], [1, 0, 0], [1, 1, 1]], dtype=torch.bool)
    one = Dist()
    assert loss_weights("token_mean", [mask[:2], mask[2:]], one) == pytest.approx([3 / 6, 3 / 6])
    assert loss_weights("seq_mean_token_mean", [mask[:2], mask[2:]], one) == pytest.approx([2 / 3, 1 / 3])


def test_shard_keeps_contiguous_equal_shares():
    items = list(range(8))
    assert [shard(items, r, 4) for r in range(4)] == [[0, 1], [2, 3], [4, 5], [6, 7]]
    assert shard(items, 0, 1) == items


def test_metrics_pass_through_with_one_process():
    m = {"loss": 0.5, "time/step_s": 1.0}
    assert reduce_metrics(m, Dist()) == m


def test_extremes_over_processes_are_the_largest_and_smallest_not_the_mean():
    """Two processes' step metrics: a NAME_max is the larger (the step's staleness bound is the most
    stale batch of any process), a NAME_min the smaller, each mini-batch's too; a process without a
    number (no valid token) does not make an extreme NaN; counts add up, times are the slowest's."""
    nan = math.nan
    a = {"loss": 1.0, "async/staleness_max": 2.0, "mismatch/abs_diff_max": 1e-3, "mismatch/is_weight_min": 0.5,
         "ratio_max": 1.5, "ratio_max/mb1": 1.1, "ratio_min": nan, "reward/masked": 1.0, "time/step_s": 3.0}
    b = {"loss": 3.0, "async/staleness_max": 0.0, "mismatch/abs_diff_max": 4e-3, "mismatch/is_weight_min": 0.9,
         "ratio_max": 1.2, "ratio_max/mb1": 1.3, "ratio_min": 0.8, "reward/masked": 2.0, "time/step_s": 5.0}
    assert combine_metrics([a, b]) == {
        "loss": 2.0, "async/staleness_max": 2.0, "mismatch/abs_diff_max": 4e-3, "mismatch/is_weight_min": 0.5,
        "ratio_max": 1.5, "ratio_max/mb1": 1.3, "ratio_min": 0.8, "reward/masked": 3.0, "time/step_s": 5.0}
    both_missing = combine_metrics([{"ratio_min": nan, "loss": 1.0}, {"loss": 2.0}])
    assert math.isnan(both_missing["ratio_min"]) and both_missing["loss"] == 1.5
    assert math.isnan(combine_metrics([{"adv/std": 1.0}, {}])["adv/std"])  # a mean over a missing share: unknown


def test_fsdp_needs_decoder_layers_to_shard():
    with pytest.raises(UserError, match="names none .*run.distributed=ddp"):
        fully_shard_policy(torch.nn.Linear(2, 2), torch.device("cpu"))
    assert not is_fsdp(torch.nn.Linear(2, 2))
