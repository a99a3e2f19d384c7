"""PURE (min-form credit): hand example and a plain-loop reference on random ragged batches."""

import math

import pytest
import torch

from botgrpo_cli.algos import compute_advantages


def pure(r, s, m, g, **opts):
    return compute_advantages("pure", token_rewards=r, scores=s, mask=m, group_ids=g, **opts)


def test_pure_by_hand():
    rho = torch.tensor([[0.0, -1.0, 0.5, 0.5, 0.2, 0.0], [0.0] * 6])
    ends = torch.zeros(2, 6, dtype=torch.bool)
    ends[0, 1] = ends[0, 3] = True  # steps [0,1] p=-1, [2,3] p=0.5, [4] p=0.2 (closed by the last token)
    m = torch.tensor([[1, 1, 1, 1, 1, 0], [1, 1, 0, 0, 0, 0]], dtype=torch.bool)
    s, g = torch.tensor([1.0, 0.0]), torch.tensor([0, 0])  # RLOO outcome: +1 and -1
    r = s[:, None] + rho  # r = s + rho, so the default rho = r - s recovers rho

    got = pure(r, s, m, g, step_ends=ends, credit="sum")
    torch.testing.assert_close(got[0], torch.tensor([0.7, 0.7, 1.7, 1.7, 1.2, 0.0]))
    torch.testing.assert_close(got[1], torch.tensor([-1.0, -1.0, 0, 0, 0, 0]))

    got = pure(r, s, m, g, step_ends=ends, credit="strict_min")
    torch.testing.assert_close(got[0], torch.tensor([0.0, 0.0, 1.2, 1.2, 1.2, 0.0]))

    p = [-1.0, 0.5, 0.2]
    z = sum(math.exp(-x / 0.1) for x in p)
    q = [math.exp(-x / 0.1) / z * x for x in p]
    want = [q[0] + q[1] + q[2]] * 2 + [q[1] + q[2]] * 2 + [q[2]]  # + outcome 1 on each valid token
    got = pure(r, s, m, g, step_ends=ends, process_rewards=rho)
    torch.testing.assert_close(got[0], torch.tensor([1.0 + w for w in want] + [0.0]))


def ref_pure(rho, s, m, g, ends, credit, temp=0.1):
    b, t = m.shape
    out = torch.zeros(b, t, dtype=torch.float64)
    for i in range(b):
        others = [float(s[j]) for j in range(b) if g[j] == g[i] and j != i]
        same = all(float(s[j]) == float(s[i]) for j in range(b) if g[j] == g[i])
        outcome = float(s[i]) - sum(others) / len(others) if others and not same else 0.0
        steps, current = [], []  # steps as (end position, min rho)
        valid = [u for u in range(t) if m[i, u]]
        for u in valid:
            current.append(float(rho[i, u]))
            if ends[i, u] or u == valid[-1]:
                steps.append((u, min(current)))
                current = []
        if credit == "soft_min":
            z = sum(math.exp(-p / temp) for _, p in steps)
            steps = [(e, math.exp(-p / temp) / z * p) for e, p in steps]
        for u in valid:
            later = [p for e, p in steps if e >= u]
            out[i, u] = (min(later) if credit == "strict_min" else sum(later)) + outcome
    return out


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("credit", ["soft_min", "strict_min", "sum"])
def test_pure_matches_loop(seed, credit):
    gen = torch.Generator().manual_seed(seed)
    b, t = 10, 12
    g = torch.randint(0, 4, (b,), generator=gen)
    m = torch.arange(t)[None, :] < torch.randint(0, t + 1, (b,), generator=gen)[:, None]
    m &= torch.rand(b, t, generator=gen) > 0.1  # holes inside completions too
    ends = torch.rand(b, t, generator=gen) < 0.25
    rho = torch.where(torch.rand(b, t, generator=gen) < 0.3, -torch.rand(b, t, generator=gen), 0.0)
    s = torch.randint(0, 2, (b,), generator=gen).float()
    got = pure(s[:, None] + rho, s, m, g, step_ends=ends, credit=credit)
    torch.testing.assert_close(got.double(), ref_pure(rho, s, m, g, ends, credit), atol=1e-5, rtol=1e-5)


def test_pure_rejects_bad_options():
    r, m = torch.zeros(2, 3), torch.ones(2, 3, dtype=torch.bool)
    with pytest.raises(ValueError, match="soft_min, strict_min, sum"):
        pure(r, torch.zeros(2), m, torch.tensor([0, 0]), credit="mean")
    with pytest.raises(ValueError, match="temperature"):
        pure(r, torch.zeros(2), m, torch.tensor([0, 0]), temperature=0.0)
