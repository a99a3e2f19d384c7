"""Policy losses: hand examples, and value + gradient against autograd through a plain loop."""

import math

import pytest
import torch

from botgrpo_cli.algos import LOSSES, policy_loss


def test_clip_by_hand():
    # ratios 1.5, 1.5, 0.5, 0.5 with A = +1, -1, +1, -1; eps 0.2:
    # l = -min(1.5, 1.2) = -1.2 (clipped); -min(-1.5, -1.2) = 1.5; -min(0.5, 0.8) = -0.5; -min(-0.5, -0.8) = 0.8 (clipped)
    logp = torch.log(torch.tensor([[1.5, 1.5, 0.5, 0.5]])).requires_grad_()
    adv = torch.tensor([[1.0, -1.0, 1.0, -1.0]])
    mask = torch.ones(1, 4, dtype=torch.bool)
    loss, metrics = policy_loss("clip", logp=logp, logp_old=torch.zeros(1, 4), advantages=adv, mask=mask,
                                loss_agg="token_mean")
    assert loss.item() == pytest.approx((-1.2 + 1.5 - 0.5 + 0.8) / 4)
    assert metrics["clip_frac"] == pytest.approx(0.5)
    assert metrics["ratio_mean"] == pytest.approx(1.0)
    assert metrics["adv_mean"] == pytest.approx(0.0)
    assert "kl" not in metrics
    loss.backward()  # clipped tokens carry no gradient; others d(-ratio A)/dlogp = -ratio A / 4
    torch.testing.assert_close(logp.grad, torch.tensor([[0.0, 1.5 / 4, -0.5 / 4, 0.0]]))


def test_aggregations_and_kl_by_hand():
    logp = torch.zeros(2, 3)
    mask = torch.tensor([[1, 1, 1], [1, 0, 0]], dtype=torch.bool)
    adv = torch.tensor([[1.0, 2.0, 3.0], [4.0, 9.0, 9.0]])  # ratio 1: l = -A on valid tokens
    loss = {agg: policy_loss("clip", logp=logp, logp_old=logp, advantages=adv, mask=mask, loss_agg=agg)[0].item()
            for agg in ("seq_mean_token_mean", "token_mean", "seq_mean_token_sum_norm")}
    assert loss["seq_mean_token_mean"] == pytest.approx(-(2.0 + 4.0) / 2)
    assert loss["token_mean"] == pytest.approx(-10.0 / 4)
    assert loss["seq_mean_token_sum_norm"] == pytest.approx(-10.0 / (2 * 3))
    norm = policy_loss("clip", logp=logp, logp_old=logp, advantages=adv, mask=mask,
                       loss_agg="seq_mean_token_sum_norm", max_completion_length=10)[0]
    assert norm.item() == pytest.approx(-10.0 / 20)
    ref = torch.full((2, 3), math.log(2.0))  # k3 = e^{ln 2} - ln 2 - 1 per token
    loss, metrics = policy_loss("clip", logp=logp, logp_old=logp, advantages=adv, mask=mask,
                                loss_agg="token_mean", logp_ref=ref, beta=0.5)
    k3 = 2.0 - math.log(2.0) - 1.0
    assert metrics["kl"] == pytest.approx(k3)
    assert loss.item() == pytest.approx(-10.0 / 4 + 0.5 * k3)


def test_ratio_range_and_entropy_bonus_by_hand():
    logp = torch.log(torch.tensor([[1.5, 0.5, 3.0]]))
    mask = torch.tensor([[True, True, False]])  # the padded 3.0 must not count
    _, metrics = policy_loss("clip", logp=logp, logp_old=torch.zeros(1, 3), advantages=torch.zeros(1, 3), mask=mask,
                             loss_agg="token_mean")
    assert (metrics["ratio_min"], metrics["ratio_max"]) == pytest.approx((0.5, 1.5))
    entropy = torch.tensor([[2.0, 4.0, 100.0]], requires_grad=True)
    zero = torch.zeros(1, 3)
    loss, _ = policy_loss("clip", logp=zero, logp_old=zero, advantages=zero, mask=mask, loss_agg="token_mean",
                          entropy=entropy, entropy_coef=0.1)
    assert loss.item() == pytest.approx(-0.1 * 3.0)  # minus coef x the aggregated entropy of valid tokens
    loss.backward()  # the bonus pushes entropy up: d loss / d H = -coef / n_valid on valid tokens
    torch.testing.assert_close(entropy.grad, torch.tensor([[-0.05, -0.05, 0.0]]))
    with pytest.raises(ValueError, match="entropy"):
        policy_loss("clip", logp=zero, logp_old=zero, advantages=zero, mask=mask, loss_agg="token_mean",
                    entropy=entropy.detach(), entropy_coef=0.1)


def test_gspo_sequence_ratio_by_hand():
    # row log-ratio mean = (0.3 - 0.1) / 2 = 0.1 -> s = e^0.1 = 1.105 > 1 + 4e-4: clipped for A > 0
    logp = torch.tensor([[0.3, -0.1]], requires_grad=True)
    _, metrics = policy_loss("gspo", logp=logp, logp_old=torch.zeros(1, 2), advantages=torch.ones(1, 2),
                             mask=torch.ones(1, 2), loss_agg="seq_mean_token_mean", eps_low=3e-4, eps_high=4e-4)
    assert metrics["ratio_mean"] == pytest.approx(math.exp(0.1), rel=1e-6)
    assert metrics["clip_frac"] == 1.0


def test_bad_options():
    x = torch.zeros(1, 2)
    with pytest.raises(KeyError, match="clip, gspo"):
        LOSSES["ppo"]
    with pytest.raises(ValueError, match="logp_ref"):
        policy_loss("clip", logp=x, logp_old=x, advantages=x, mask=x, loss_agg="token_mean", beta=0.1)
    with pytest.raises(ValueError, match="token_mean"):
        policy_loss("clip", logp=x, logp_old=x, advantages=x, mask=x, loss_agg="sum")


def ref_loss(name, logp, old, adv, mask, agg, ref, beta, lo, hi, max_len):
    """Per-token loop with scalar autograd ops."""
    b, t = mask.shape
    rows, total, count = [], 0.0, 0
    for i in range(b):
        valid = [u for u in range(t) if mask[i, u]]
        if name == "gspo" and valid:
            seq = torch.exp(sum(logp[i, u] - old[i, u] for u in valid) / len(valid))
            varies = len({float(adv[i, u]) for u in valid}) > 1
        row = 0.0
        for u in valid:
            if name == "gspo":
                ratio = seq.detach() * torch.exp(logp[i, u] - logp[i, u].detach()) if varies else seq
            else:
                ratio = torch.exp(logp[i, u] - old[i, u])
            a = float(adv[i, u])
            term = -torch.minimum(ratio * a, ratio.clamp(1 - lo, 1 + hi) * a)
            if beta > 0:
                d = ref[i, u] - logp[i, u]
                term = term + beta * (torch.exp(d) - d - 1)
            row = row + term
        rows.append(row / max(len(valid), 1))
        total, count = total + row, count + len(valid)
    if agg == "seq_mean_token_mean":
        return sum(rows) / b
    if agg == "token_mean":
        return total / max(count, 1)
    return total / (b * (max_len or t))


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("name,lo,hi", [("clip", 0.2, 0.28), ("gspo", 0.05, 0.08)])
@pytest.mark.parametrize("agg", ["seq_mean_token_mean", "token_mean", "seq_mean_token_sum_norm"])
def test_loss_and_gradient_match_loop(seed, name, lo, hi, agg):
    gen = torch.Generator().manual_seed(seed)
    b, t = 5, 6
    mask = torch.arange(t)[None, :] < torch.randint(0, t + 1, (b,), generator=gen)[:, None]
    old = -torch.rand(b, t, generator=gen) * 3
    start = old + 0.3 * torch.randn(b, t, generator=gen)
    ref = old + 0.2 * torch.randn(b, t, generator=gen)
    adv = torch.randn(b, t, generator=gen)
    adv[::2] = adv[::2, :1]  # even rows: sequence-constant advantages (GSPO's sequence form)
    beta = 0.1 if seed % 2 else 0.0
    max_len = 8 if seed == 3 else None

    logp = start.clone().requires_grad_()
    loss, metrics = policy_loss(name, logp=logp, logp_old=old, advantages=adv, mask=mask, loss_agg=agg,
                                logp_ref=ref, beta=beta, eps_low=lo, eps_high=hi, max_completion_length=max_len)
    loss.backward()
    logp_ref = start.clone().requires_grad_()
    want = ref_loss(name, logp_ref, old, adv, mask, agg, ref, beta, lo, hi, max_len)
    want.backward()
    assert loss.item() == pytest.approx(want.item(), rel=1e-5, abs=1e-6)
    torch.testing.assert_close(logp.grad, logp_ref.grad, atol=1e-6, rtol=1e-5)
    assert math.isfinite(metrics["kl"]) and 0.0 <= metrics["clip_frac"] <= 1.0
