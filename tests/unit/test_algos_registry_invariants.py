"""Properties every registered estimator and loss must have, for every value of each choice option
it declares: the cases come from the registries, so a new estimator or loss is tested without
editing a list here."""

from __future__ import annotations

import inspect

import pytest
import torch

from botgrpo_cli.algos import ADVANTAGES, LOSSES, compute_advantages, policy_loss
from botgrpo_cli.algos.losses import LOSS_AGGS
from botgrpo_cli.algos.options import OneOf, rules
from test_algos_advantages import random_batch, run

SEEDS = range(4)


def variants(registry) -> list[tuple[str, dict]]:
    """(name, options): each name with its defaults, then each other value of each OneOf option."""
    out = []
    for name in registry:
        out.append((name, {}))
        for option, (_, rule) in rules(registry[name]).items():
            if isinstance(rule, OneOf):
                default = inspect.signature(registry[name]).parameters[option].default
                out += [(name, {option: v}) for v in rule.values if v != default]
    return out


ESTIMATORS = variants(ADVANTAGES)
IDS = [f"{n}-{o}" if o else n for n, o in ESTIMATORS]


def test_the_registry_is_what_is_tested():
    assert {name for name, _ in ESTIMATORS} == set(ADVANTAGES.names()) and len(ESTIMATORS) > len(ADVANTAGES.names())


@pytest.mark.parametrize("name,options", ESTIMATORS, ids=IDS)
@pytest.mark.parametrize("seed", SEEDS)
def test_padding_invariance(name, options, seed):
    r, s, m, g = random_batch(seed)
    r2 = torch.cat([r, 77.0 * torch.randn(r.shape[0], 5)], 1)
    m2 = torch.cat([m, torch.zeros(r.shape[0], 5, dtype=torch.bool)], 1)
    a, a2 = run(name, r, s, m, g, **options), run(name, r2, s, m2, g, **options)
    torch.testing.assert_close(a2[:, : r.shape[1]], a)
    assert bool((a2[~m2] == 0).all()) and bool((a[~m] == 0).all())


@pytest.mark.parametrize("name,options", ESTIMATORS, ids=IDS)
@pytest.mark.parametrize("seed", SEEDS)
def test_rows_and_group_labels_can_be_reordered(name, options, seed):
    """Permuting rows (with their group ids) permutes the advantages; renaming groups changes nothing."""
    r, s, m, g = random_batch(seed, holes=True)
    a = run(name, r, s, m, g, **options)
    perm = torch.randperm(len(s), generator=torch.Generator().manual_seed(seed))
    torch.testing.assert_close(run(name, r[perm], s[perm], m[perm], g[perm], **options), a[perm],
                               atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(run(name, r, s, m, 1000 - 3 * g, **options), a)


@pytest.mark.parametrize("name,options", ESTIMATORS, ids=IDS)
def test_degenerate_groups_give_zero_for_outcome_rewards(name, options):
    """Constant groups, single members and empty rows: finite, and 0 when every token's reward is its
    completion's score (a to-go return of those varies along the row, so only finiteness is asked)."""
    s = torch.tensor([0.1, 0.1, 0.1, 0.3, 0.0, 1.5])
    m = torch.tensor([[1, 1, 1, 0], [1, 1, 0, 0], [1, 0, 0, 0], [1, 1, 1, 0], [0, 0, 0, 0], [1, 1, 0, 0]],
                     dtype=torch.bool)
    g = torch.tensor([4, 4, 4, 9, 2, 2])
    a = run(name, s[:, None] * m, s, m, g, **options)
    assert torch.isfinite(a).all()
    if options.get("reward_return", "immediate") == "immediate":
        assert bool((a[:5] == 0).all())
    noisy = run(name, s[:, None] * m + torch.randn(6, 4) * m, s, m, g, **options)
    assert torch.isfinite(noisy).all()


@pytest.mark.parametrize("name,options", ESTIMATORS, ids=IDS)
def test_float_mask_equals_bool_mask_and_no_grad(name, options):
    r, s, m, g = random_batch(4)
    a = run(name, r.requires_grad_(), s, m, g, **options)
    torch.testing.assert_close(run(name, r, s, m.float(), g, **options), a)
    assert not a.requires_grad and a.dtype == torch.float32


@pytest.mark.parametrize("name", LOSSES.names())
@pytest.mark.parametrize("agg", LOSS_AGGS)
@pytest.mark.parametrize("seed", SEEDS)
def test_on_policy_gradient_is_the_policy_gradient(name, agg, seed):
    """At logp_old = logp every surrogate's gradient is that of -A * logp, aggregated the same way (the
    value too for the ratio surrogates; cispo and vespo weigh logp itself, sapo a sigmoid of the ratio)."""
    gen = torch.Generator().manual_seed(seed)
    b, t = 5, 6
    mask = torch.arange(t)[None, :] < torch.randint(0, t + 1, (b,), generator=gen)[:, None]
    start = -torch.rand(b, t, generator=gen) * 3
    adv = torch.randn(b, t, generator=gen)
    adv[::2] = adv[::2, :1]  # some rows with one advantage for every token
    logp = start.clone().requires_grad_()
    loss, _ = policy_loss(name, logp=logp, logp_old=start, advantages=adv, mask=mask, loss_agg=agg)
    loss.backward()
    plain = start.clone().requires_grad_()
    want, _ = policy_loss("clip", logp=plain, logp_old=plain.detach(), advantages=adv, mask=mask, loss_agg=agg,
                          eps_low=1.0, eps_high=1e9)  # no clipping: -ratio * A with ratio = 1
    want.backward()
    if name in ("clip", "gspo"):
        assert loss.item() == pytest.approx(want.item(), rel=1e-5, abs=1e-6)
    torch.testing.assert_close(logp.grad, plain.grad, atol=1e-6, rtol=1e-5)
    padded = torch.cat([start, torch.zeros(b, 3)], 1).requires_grad_()
    loss_padded, _ = policy_loss(name, logp=padded, logp_old=padded.detach(), loss_agg=agg, max_completion_length=t,
                                 advantages=torch.cat([adv, torch.randn(b, 3)], 1),
                                 mask=torch.cat([mask, torch.zeros(b, 3, dtype=torch.bool)], 1))
    assert loss_padded.item() == pytest.approx(loss.item(), rel=1e-5, abs=1e-6)  # padding changes nothing


def test_compute_advantages_refuses_what_no_estimator_declares():
    r, s, m, g = random_batch(0)
    for name in ADVANTAGES:
        with pytest.raises(KeyError, match=f"unknown advantage estimator {name!r} option 'no_such_option'"):
            compute_advantages(name, token_rewards=r, scores=s, mask=m, group_ids=g, no_such_option=1)
