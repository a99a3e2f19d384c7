"""Advantage estimators: hand examples, plain-loop references, and the properties of docs/algorithms.md §2."""

import math

import pytest
import torch

from botgrpo_cli.algos import ADVANTAGES, apply_reward_return, compute_advantages

SEEDS = range(6)


def random_batch(seed: int, t: int = 9, holes: bool = False):
    """Ragged groups (sizes 1-5, non-contiguous ids), lengths 0..T, finite garbage on padding."""
    gen = torch.Generator().manual_seed(seed)
    sizes = torch.randint(1, 6, (6,), generator=gen).tolist()
    ids = torch.tensor([7 * k + 3 for k, n in enumerate(sizes) for _ in range(n)])
    ids = ids[torch.randperm(len(ids), generator=gen)]
    b = len(ids)
    lengths = torch.randint(0, t + 1, (b,), generator=gen)
    mask = torch.arange(t)[None, :] < lengths[:, None]
    if holes:
        mask &= torch.rand(b, t, generator=gen) > 0.2
    r = torch.randn(b, t, generator=gen)
    r = torch.where(mask, r, 1e3 * torch.randn(b, t, generator=gen))  # padding must not matter
    scores = torch.randn(b, generator=gen)
    return r, scores, mask, ids


def run(name, r, s, m, g, **opts):
    return compute_advantages(name, token_rewards=r, scores=s, mask=m, group_ids=g, **opts)


# ---------- plain-loop references (float64, one row / group at a time) ----------

def ref_grpo(s, m, g, scale="group", eps=1e-4):
    s, groups = s.double().tolist(), g.tolist()
    out = torch.zeros(m.shape, dtype=torch.float64)
    batch_sd = torch.tensor(s).std().item() if len(s) > 1 else 0.0
    for i, gi in enumerate(groups):
        vals = [s[j] for j, gj in enumerate(groups) if gj == gi]
        mu = sum(vals) / len(vals)
        sd = math.sqrt(sum((v - mu) ** 2 for v in vals) / (len(vals) - 1)) if len(vals) > 1 else 0.0
        if len(vals) < 2 or sd <= 1e-6 * abs(mu):
            continue
        div = {"group": sd + eps, "batch": batch_sd + eps, "none": 1.0}[scale]
        for t in range(m.shape[1]):
            out[i, t] = (s[i] - mu) / div if m[i, t] else 0.0
    return out


def _bag(rows, r, m):
    """Tokens (value, weight = 1/L) of the given rows; and the number of non-empty rows."""
    bag = []
    for i in rows:
        length = int(m[i].sum())
        bag += [(float(r[i, t]), 1.0 / length) for t in range(m.shape[1]) if m[i, t]]
    return bag, sum(1 for i in rows if m[i].any())


def _weighted(bag, count, c):
    mu = sum(w * v for v, w in bag) / count
    var = sum(w * (v - mu) ** 2 for v, w in bag) / (count - c) if count - c > 0 else 0.0
    return mu, math.sqrt(var)


def ref_bot_grpo(r, m, g, scale="group", eps=1e-4, std_correction=1):
    groups = g.tolist()
    out = torch.zeros(m.shape, dtype=torch.float64)
    batch_bag, batch_n = _bag(range(len(groups)), r, m)
    _, batch_sd = _weighted(batch_bag, batch_n, std_correction)
    for i, gi in enumerate(groups):
        bag, count = _bag([j for j, gj in enumerate(groups) if gj == gi], r, m)
        if count < 2:
            continue
        mu, sd = _weighted(bag, count, std_correction)
        if sd <= 1e-6 * abs(mu):
            continue
        div = {"group": sd + eps, "batch": batch_sd + eps, "none": 1.0}[scale]
        for t in range(m.shape[1]):
            out[i, t] = (float(r[i, t]) - mu) / div if m[i, t] else 0.0
    return out


def ref_rloo(s, m, g):
    s, groups = s.double().tolist(), g.tolist()
    out = torch.zeros(m.shape, dtype=torch.float64)
    for i, gi in enumerate(groups):
        others = [s[j] for j, gj in enumerate(groups) if gj == gi and j != i]
        for t in range(m.shape[1]):
            if others and m[i, t]:
                out[i, t] = s[i] - sum(others) / len(others)
    return out


# ---------- hand-worked examples ----------

def test_bot_grpo_by_hand():
    # group 0: rows [1,2,3] and [0,1]; weights 1/3 and 1/2; W = 2; mu = (2 + 0.5) / 2 = 1.25
    # var = (1/3 (0.0625 + 0.5625 + 3.0625) + 1/2 (1.5625 + 0.0625)) / (2 - 1) = 2.0416667
    r = torch.tensor([[1.0, 2.0, 3.0], [0.0, 1.0, 0.0], [5.0, 4.0, 0.0]])
    m = torch.tensor([[1, 1, 1], [1, 1, 0], [1, 1, 0]], dtype=torch.bool)
    a = run("bot_grpo", r, torch.zeros(3), m, torch.tensor([0, 0, 1]))
    sd = math.sqrt(2.0416667) + 1e-4
    want = torch.tensor([[-0.25 / sd, 0.75 / sd, 1.75 / sd], [-1.25 / sd, -0.25 / sd, 0.0], [0.0, 0.0, 0.0]])
    torch.testing.assert_close(a, want, atol=1e-5, rtol=1e-5)


def test_grpo_rloo_dr_grpo_by_hand():
    s = torch.tensor([1.0, 0.0, 0.0, 1.0, 3.0])  # group 0: {1, 0, 0} mean 1/3, std sqrt(1/3)
    g = torch.tensor([0, 0, 0, 5, 5])  # group 5: {1, 3} mean 2, std sqrt(2)
    m = torch.ones(5, 2, dtype=torch.bool)
    grpo = run("grpo", torch.zeros(5, 2), s, m, g)[:, 0]
    sd0, sd5 = math.sqrt(1 / 3) + 1e-4, math.sqrt(2) + 1e-4
    torch.testing.assert_close(grpo, torch.tensor([(2 / 3) / sd0, (-1 / 3) / sd0, (-1 / 3) / sd0, -1 / sd5, 1 / sd5]))
    dr = run("dr_grpo", torch.zeros(5, 2), s, m, g)[:, 1]
    torch.testing.assert_close(dr, torch.tensor([2 / 3, -1 / 3, -1 / 3, -1.0, 1.0]))
    rloo = run("rloo", torch.zeros(5, 2), s, m, g)[:, 0]
    torch.testing.assert_close(rloo, torch.tensor([1.0, -0.5, -0.5, -2.0, 2.0]))


def test_unknown_estimator_lists_known_names():
    with pytest.raises(KeyError, match="bot_grpo.*grpo.*pure.*rloo"):
        ADVANTAGES["ppo"]
    with pytest.raises(ValueError, match="group, batch, none"):
        run("grpo", *random_batch(0), scale="rows")


# ---------- vectorised == loop reference on random ragged groups ----------

@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("scale", ["group", "batch", "none"])
def test_outcome_estimators_match_loop(seed, scale):
    r, s, m, g = random_batch(seed)
    torch.testing.assert_close(run("grpo", r, s, m, g, scale=scale).double(), ref_grpo(s, m, g, scale),
                               atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(run("rloo", r, s, m, g).double(), ref_rloo(s, m, g), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("scale,c", [("group", 1), ("group", 0), ("batch", 1), ("none", 1)])
def test_bot_grpo_matches_loop(seed, scale, c):
    r, s, m, g = random_batch(seed, holes=seed % 2 == 1)
    got = run("bot_grpo", r, s, m, g, scale=scale, std_correction=c).double()
    torch.testing.assert_close(got, ref_bot_grpo(r, m, g, scale, std_correction=c), atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("seed", SEEDS)
def test_reward_return_matches_loop(seed):
    r, _, m, _ = random_batch(seed, holes=True)
    sum_ref, min_ref = torch.zeros_like(r), torch.zeros_like(r)
    for i in range(r.shape[0]):
        for t in range(r.shape[1]):
            rest = [float(r[i, u]) for u in range(t, r.shape[1]) if m[i, u]]
            if m[i, t]:
                sum_ref[i, t], min_ref[i, t] = sum(rest), min(rest)
    torch.testing.assert_close(apply_reward_return(r, m, "sum_to_go"), sum_ref, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(apply_reward_return(r, m, "min_to_go"), min_ref)
    assert apply_reward_return(r, m, "immediate") is r


def test_bot_grpo_uses_reward_return():
    r, s, m, g = random_batch(3)
    want = run("bot_grpo", apply_reward_return(r, m, "sum_to_go"), s, m, g)
    torch.testing.assert_close(run("bot_grpo", r, s, m, g, reward_return="sum_to_go"), want)


# ---------- the properties of §2 ----------

@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("scale", ["group", "batch", "none"])
def test_drop_in_constant_rewards_equal_grpo(seed, scale):
    _, s, m, g = random_batch(seed)
    m[:, 0] = True  # drop-in holds for non-empty completions
    r = s[:, None] * m
    torch.testing.assert_close(run("bot_grpo", r, s, m, g, scale=scale), run("grpo", r, s, m, g, scale=scale),
                               atol=2e-5, rtol=2e-5)


@pytest.mark.parametrize("seed", SEEDS)
def test_length_invariance_by_repetition(seed):
    r, s, m, g = random_batch(seed)
    t = r.shape[1]
    row = int(torch.argmax(m.sum(1)))  # repeat the longest completion's rewards: L -> 2L
    length = int(m[row].sum())
    r2 = torch.cat([r, torch.zeros(r.shape[0], t)], 1)
    m2 = torch.cat([m, torch.zeros_like(m)], 1)
    r2[row, length: 2 * length] = r[row, :length]
    m2[row, length: 2 * length] = True
    a, a2 = run("bot_grpo", r, s, m, g), run("bot_grpo", r2, s, m2, g)
    torch.testing.assert_close(a2[:, :t] * m, a, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(a2[row, length: 2 * length], a[row, :length], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("scale,shift", [(3.0, 5.0), (0.5, -2.0), (20.0, 100.0)])
def test_affine_invariance(seed, scale, shift):
    r, s, m, g = random_batch(seed)
    a = run("bot_grpo", r, s, m, g)
    a2 = run("bot_grpo", scale * r + shift, s, m, g)
    torch.testing.assert_close(a2, a, atol=2e-3, rtol=2e-3)  # eps = 1e-4 is not scaled


# Padding, reordering, degenerate-group and mask-type invariance of every registered estimator:
# test_algos_registry_invariants.py.


@pytest.mark.parametrize("name", ["grpo", "bot_grpo", "rloo", "pure"])
def test_degenerate_groups_give_zero(name):
    r = torch.tensor([[0.1, 0.1, 0.1, 0.0], [0.1, 0.1, 0.0, 0.0], [0.1, 0.0, 0.0, 0.0],  # constant group
                      [0.3, -2.0, 9.0, 0.0],  # single member with token variation
                      [0.0, 0.0, 0.0, 0.0], [1.0, 2.0, 0.0, 0.0]])  # an empty completion in a group
    m = torch.tensor([[1, 1, 1, 0], [1, 1, 0, 0], [1, 0, 0, 0], [1, 1, 1, 0], [0, 0, 0, 0], [1, 1, 0, 0]],
                     dtype=torch.bool)
    s = torch.tensor([0.1, 0.1, 0.1, 0.3, 0.0, 1.5])
    g = torch.tensor([4, 4, 4, 9, 2, 2])
    a = run(name, r, s, m, g)
    assert torch.isfinite(a).all()
    # pure's process return is absolute (not group-relative), so its single member keeps it
    zero_rows = [0, 1, 2, 4] if name == "pure" else [0, 1, 2, 3, 4]
    assert bool((a[zero_rows] == 0).all())


def test_shape_errors_say_what_is_expected():
    r, s, m, g = random_batch(0)
    with pytest.raises(ValueError, match=r"must both be \(B, T\)"):
        run("bot_grpo", r, s, m[:, :-1], g)
    with pytest.raises(ValueError, match="scores and group_ids must be"):
        run("grpo", r, s[:-1], m, g)


# ---------- bot_grpo baseline=outcome: the run-on-free variant (docs/algorithms.md §2) ----------

def run_outcome(r, s, m, g, **opts):
    return run("bot_grpo", r, s, m, g, baseline="outcome", **opts)


def test_outcome_baseline_by_hand_pays_no_clean_token_of_a_failing_completion():
    # One group: a success (score 1, no span) and two failures (score 0) with one -1 span each.
    s = torch.tensor([1.0, 0.0, 0.0])
    rho = torch.tensor([[0.0, 0.0, 0.0], [0.0, -1.0, 0.0], [-1.0, 0.0, 0.0]])
    m = torch.ones(3, 3, dtype=torch.bool)
    r = s[:, None] + rho
    g = torch.zeros(3, dtype=torch.long)
    sd = math.sqrt(1 / 3) + 1e-4  # scores {1, 0, 0}: mean 1/3, std sqrt(1/3)
    want = torch.tensor([[2 / 3, 2 / 3, 2 / 3], [-1 / 3, -1 / 3, -1 / 3], [-1 / 3, -1 / 3, -1 / 3]]) / sd + rho
    torch.testing.assert_close(run_outcome(r, s, m, g), want, atol=1e-5, rtol=1e-5)
    # The same group, all failing: the bag pays the clean tokens (mu_k < 0), the outcome baseline does not.
    s0 = torch.zeros(3)
    rho0 = torch.tensor([[0.0, 0.0, -1.0], [0.0, -1.0, 0.0], [-1.0, 0.0, 0.0]])
    bag, outcome = run("bot_grpo", rho0, s0, m, g), run_outcome(rho0, s0, m, g)
    assert bool((bag[rho0 == 0] > 0).all())  # the run-on bias
    torch.testing.assert_close(outcome, rho0)  # clean tokens 0, each span keeps its -1


def test_outcome_baseline_uses_process_rewards_when_given():
    r, s, m, g = random_batch(1)
    rho = torch.randn(r.shape)
    want = run("grpo", r, s, m, g) + rho * m
    torch.testing.assert_close(run_outcome(r, s, m, g, process_rewards=rho), want)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("scale", ["group", "batch", "none"])
def test_outcome_baseline_drop_in_constant_rewards_equal_grpo(seed, scale):
    _, s, m, g = random_batch(seed)
    r = s[:, None] * m  # no token part: rho = r - s = 0 on valid tokens (even empty rows)
    torch.testing.assert_close(run_outcome(r, s, m, g, scale=scale), run("grpo", r, s, m, g, scale=scale),
                               atol=2e-5, rtol=2e-5)


@pytest.mark.parametrize("seed", SEEDS)
def test_outcome_baseline_length_invariance_by_repetition(seed):
    r, s, m, g = random_batch(seed)
    t = r.shape[1]
    row = int(torch.argmax(m.sum(1)))
    length = int(m[row].sum())
    r2 = torch.cat([r, torch.zeros(r.shape[0], t)], 1)
    m2 = torch.cat([m, torch.zeros_like(m)], 1)
    r2[row, length: 2 * length] = r[row, :length]
    m2[row, length: 2 * length] = True
    a, a2 = run_outcome(r, s, m, g), run_outcome(r2, s, m2, g)
    torch.testing.assert_close(a2[:, :t] * m, a, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(a2[row, length: 2 * length], a[row, :length], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("a,b", [(3.0, 5.0), (0.5, -2.0), (20.0, 100.0)])
def test_outcome_baseline_affine(seed, a, b):
    """A shift of r and s together changes nothing; a scale keeps the outcome part and scales the
    token part with it (rho is not normalised: a span of -1 is a penalty of one reward unit)."""
    r, s, m, g = random_batch(seed)
    base = run_outcome(r, s, m, g)
    torch.testing.assert_close(run_outcome(r + b, s + b, m, g), base, atol=2e-3, rtol=2e-3)
    outcome = run("grpo", r, s, m, g)
    torch.testing.assert_close(run_outcome(a * r + b, a * s + b, m, g), outcome + a * (base - outcome),
                               atol=2e-3, rtol=2e-3)


@pytest.mark.parametrize("seed", SEEDS)
def test_outcome_baseline_padding_invariance(seed):
    r, s, m, g = random_batch(seed)
    r2 = torch.cat([r, 77.0 * torch.randn(r.shape[0], 5)], 1)
    m2 = torch.cat([m, torch.zeros(r.shape[0], 5, dtype=torch.bool)], 1)
    a, a2 = run_outcome(r, s, m, g), run_outcome(r2, s, m2, g)
    torch.testing.assert_close(a2[:, : r.shape[1]], a)
    assert bool((a2[~m2] == 0).all())


def test_outcome_baseline_degenerate_groups_and_bad_option():
    r = torch.tensor([[0.1, 0.1, 0.0], [0.1, 0.0, 0.0], [0.3, 0.3, 0.3], [0.0, 0.0, 0.0]])
    m = torch.tensor([[1, 1, 0], [1, 0, 0], [1, 1, 1], [0, 0, 0]], dtype=torch.bool)
    s = torch.tensor([0.1, 0.1, 0.3, 0.0])
    a = run_outcome(r, s, m, torch.tensor([4, 4, 9, 2]))  # constant group, single member, empty row
    assert torch.isfinite(a).all() and bool((a == 0).all())
    with pytest.raises(ValueError, match="baseline='mean' is not valid.*bag, outcome"):
        run("bot_grpo", r, s, m, torch.tensor([4, 4, 9, 2]), baseline="mean")


@pytest.mark.parametrize("mask_dtype", [torch.bool, torch.float32, torch.int64])
@pytest.mark.parametrize("reward_return", ["immediate", "sum_to_go"])
def test_bot_grpo_row_blocks_change_no_bit(monkeypatch, mask_dtype, reward_return):
    """bot_grpo's (B, T) passes run over blocks of rows sized for the cache: blocks of 3 rows (the
    last one short) give exactly the figures of one block holding the whole batch."""
    import botgrpo_cli.algos.masked as masked

    r, s, m, g = random_batch(5, t=11, holes=True)
    m = m.to(mask_dtype)
    results = []
    for elements in (3 * r.shape[1], 10**9):
        monkeypatch.setattr(masked, "BLOCK_ELEMENTS", elements)
        results.append(run("bot_grpo", r, s, m, g, reward_return=reward_return))
    assert r.shape[0] % 3 != 0
    assert torch.equal(results[0], results[1])
