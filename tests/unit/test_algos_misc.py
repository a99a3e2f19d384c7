"""pass@k, presets, DAPO helpers, span projection and masked reductions."""

import math
import random

import pytest
import torch

from botgrpo_cli.algos import (PRESETS, Preset, group_sum, masked_mean, masked_sum, overlong_penalty, pass_at_k,
                               project_spans, token_rewards, zero_variance_groups)
from botgrpo_cli.algos.trl_loss_types import algo_fields


def test_pass_at_k_matches_exact_binomials():
    rng = random.Random(0)
    for _ in range(300):
        n = rng.randint(1, 60)
        c, k = rng.randint(0, n), rng.randint(1, n)
        exact = 1.0 - math.comb(n - c, k) / math.comb(n, k)
        assert pass_at_k(n, c, k) == pytest.approx(exact, abs=1e-12)
    assert pass_at_k(10, 8, 3) == 1.0  # n - c < k: every draw of 3 holds a correct one
    assert pass_at_k(1000, 1, 1) == pytest.approx(0.001)
    assert 0.0 < pass_at_k(2000, 3, 500) < 1.0  # C(2000, 500) overflows a float; the product form does not


def test_pass_at_k_rejects_impossible_counts():
    with pytest.raises(ValueError, match="at least 5"):
        pass_at_k(4, 1, 5)
    with pytest.raises(ValueError):
        pass_at_k(4, 5, 1)


def test_presets_table():
    clip = {"eps_low": 0.2, "eps_high": 0.2}
    assert PRESETS["bot_grpo"] == Preset(advantage="bot_grpo", advantage_options={}, loss="clip",
                                         loss_options=clip, loss_agg="seq_mean_token_mean",
                                         dynamic_sampling=False, overlong_shaping=False)
    assert PRESETS["grpo"] == Preset("grpo", "clip", "seq_mean_token_mean", loss_options=clip)
    dr = PRESETS["dr_grpo"]
    assert (dr.advantage, dr.advantage_options, dr.loss_agg) == ("grpo", {"scale": "none"}, "seq_mean_token_sum_norm")
    dapo = PRESETS["dapo"]
    assert dapo.loss_options == {"eps_low": 0.2, "eps_high": 0.28} and dapo.loss_agg == "token_mean"
    assert dapo.dynamic_sampling and dapo.overlong_shaping
    gspo = PRESETS["gspo"]
    assert (gspo.advantage, gspo.loss, gspo.loss_options) == ("grpo", "gspo", {"eps_low": 3e-4, "eps_high": 4e-4})
    assert (PRESETS["pure"].advantage, PRESETS["pure"].loss_agg) == ("pure", "token_mean")
    assert set(PRESETS) == {"grpo", "bot_grpo", "bot_grpo_outcome", "dr_grpo", "dapo", "gspo", "pure", "cispo", "sapo",
                            "vespo", "luspo"}
    for name in ("cispo", "sapo", "vespo", "luspo"):  # TRL's loss_type of the same name, as the GRPOConfig mapping
        trl, _ = algo_fields({"loss_type": name, "importance_sampling_level": "sequence" if name == "luspo" else "token"})
        assert (PRESETS[name].advantage, PRESETS[name].loss, PRESETS[name].loss_agg) == ("grpo", trl["loss"],
                                                                                       trl["loss_agg"])
    assert PRESETS["cispo"].loss_options == {"eps_high": 5.0}  # ScaleRL's cap (TRL's default is its epsilon, 0.2)
    assert PRESETS["bot_grpo_outcome"].advantage_options == {"baseline": "outcome"}
    assert not any(p.dynamic_sampling or p.overlong_shaping for name, p in PRESETS.items() if name != "dapo")
    with pytest.raises(AttributeError):
        PRESETS["grpo"].loss = "gspo"


def test_overlong_penalty():
    lengths = torch.tensor([10, 16, 17, 18, 20, 21, 100])
    got = overlong_penalty(lengths, max_len=20, cache=4)  # ramp over (16, 20]
    torch.testing.assert_close(got, torch.tensor([0.0, 0.0, -0.25, -0.5, -1.0, -1.0, -1.0]))
    torch.testing.assert_close(overlong_penalty(lengths, 20, 0), torch.tensor([0.0] * 5 + [-1.0] * 2))
    with pytest.raises(ValueError):
        overlong_penalty(lengths, 20, 30)


def test_zero_variance_groups():
    scores = torch.tensor([1.0, 1.0, 0.0, 1.0, 0.3, 0.5])
    groups = torch.tensor([3, 3, 8, 8, 1, 2])
    assert zero_variance_groups(scores, groups).tolist() == [True, True, False, False, True, True]


def test_project_spans_by_hand():
    # "hello world": tokens "hel" "lo" " wor" "ld" <eos>; spans [4, 7) -1 and [0, 11) +0.5
    offsets = [[(0, 3), (3, 5), (5, 9), (9, 11), (11, 11)], [(0, 2), (2, 2)]]
    spans = [[(4, 7, -1.0), (0, 11, 0.5)], []]
    rho = project_spans(spans, offsets, T=6)
    want = torch.tensor([[0.5, 0.5 - 0.5, 0.5 - 0.5, 0.5, 0.0, 0.0], [0.0] * 6])
    torch.testing.assert_close(rho, want)


def test_project_spans_partial_overlap_and_multi_char_tokens():
    # code points, not bytes: a 4-code-point token "😀😀ab" at [0, 4); span covers [1, 2) and [3, 9)
    offsets = [[(0, 4), (4, 10)]]
    rho = project_spans([[(1, 2, 2.0), (3, 9, -1.0)]], offsets, T=3)
    torch.testing.assert_close(rho, torch.tensor([[2.0 / 4 - 1.0 / 4, -5.0 / 6, 0.0]]))
    assert project_spans([[], []], [[(0, 1)], []], T=2).abs().sum() == 0
    with pytest.raises(ValueError, match="at most 1"):
        project_spans([[]], [[(0, 1), (1, 2)]], T=1)
    with pytest.raises(ValueError, match="start <= end"):
        project_spans([[(5, 2, 1.0)]], [[(0, 1)]], T=1)


def test_token_rewards():
    rho = torch.tensor([[0.0, -1.0, 0.5], [2.0, 0.0, 0.0]])
    mask = torch.tensor([[1, 1, 1], [1, 0, 0]], dtype=torch.bool)
    got = token_rewards(torch.tensor([1.0, 0.0]), rho, mask, lambda_seq=2.0, lambda_tok=0.5)
    torch.testing.assert_close(got, torch.tensor([[2.0, 1.5, 2.25], [1.0, 0.0, 0.0]]))
    outcome = token_rewards(torch.tensor([1.0, 0.0]), rho, mask, lambda_tok=0.0)
    torch.testing.assert_close(outcome, torch.tensor([[1.0, 1.0, 1.0], [0.0, 0.0, 0.0]]))


def test_masked_reductions_and_group_sum():
    x = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    m = torch.tensor([[1, 0, 1], [0, 0, 0]], dtype=torch.bool)
    assert masked_sum(x, m).item() == 4.0
    torch.testing.assert_close(masked_mean(x, m, dim=1), torch.tensor([2.0, 0.0]))  # empty row -> 0
    assert masked_mean(x, m).item() == 2.0
    got = group_sum(torch.tensor([1.0, 2.0, 4.0]), torch.tensor([1, 0, 1]), 2)
    torch.testing.assert_close(got, torch.tensor([2.0, 5.0]))
