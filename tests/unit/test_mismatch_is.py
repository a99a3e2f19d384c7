"""The engine/trainer mismatch correction: importance weights by hand (truncated and masked, per token
and per row), the figures logged, where the weights enter the loss, and the trainer's choice of mode."""

import math

import pytest
import torch

from botgrpo_cli.algos import policy_loss
from botgrpo_cli.algos.losses import MISMATCH_THRESHOLD, mismatch_stats, mismatch_weights
from botgrpo_cli.config import AlgoConfig, load_config
from botgrpo_cli.errors import UserError
from botgrpo_cli.rollout import RolloutBatch
from botgrpo_cli.trainer.loop import engine_mismatch, stale_inputs

LN = math.log
# trainer / engine ratios 3, 0.5, 1 on row 0; row 1: 1.5 then padding (whose values must not count)
TRAINER = torch.tensor([[LN(3.0), LN(0.5), 0.0], [LN(1.5), 9.0, 9.0]])
ENGINE = torch.zeros(2, 3)
MASK = torch.tensor([[1, 1, 1], [1, 0, 0]], dtype=torch.bool)


def test_token_weights_truncated_or_masked_by_hand():
    tis = mismatch_weights(TRAINER, ENGINE, MASK, "token_truncate", 2.0)
    torch.testing.assert_close(tis, torch.tensor([[2.0, 0.5, 1.0], [1.5, 0.0, 0.0]]))
    tis_low = mismatch_weights(TRAINER, ENGINE, MASK, "token_truncate", 2.0, is_min=0.8)
    torch.testing.assert_close(tis_low, torch.tensor([[2.0, 0.8, 1.0], [1.5, 0.0, 0.0]]))
    mis = mismatch_weights(TRAINER, ENGINE, MASK, "token_mask", 2.0, is_min=0.8)
    torch.testing.assert_close(mis, torch.tensor([[0.0, 0.0, 1.0], [1.5, 0.0, 0.0]]))


def test_sequence_weights_are_the_rows_product_by_hand():
    # row 0: 3 * 0.5 * 1 = 1.5 on each valid token; row 1: 1.5 (padding left out of the product)
    seq = mismatch_weights(TRAINER, ENGINE, MASK, "sequence_truncate", 1.2)
    torch.testing.assert_close(seq, torch.tensor([[1.2, 1.2, 1.2], [1.2, 0.0, 0.0]]))
    masked = mismatch_weights(TRAINER, ENGINE, MASK, "sequence_mask", 1.4)
    torch.testing.assert_close(masked, torch.zeros(2, 3))
    kept = mismatch_weights(TRAINER, ENGINE, MASK, "sequence_mask", 2.0)
    torch.testing.assert_close(kept, torch.tensor([[1.5, 1.5, 1.5], [1.5, 0.0, 0.0]]))
    with pytest.raises(ValueError, match="mismatch_is"):
        mismatch_weights(TRAINER, ENGINE, MASK, "token", 2.0)


def test_huge_gaps_stay_finite_and_carry_no_gradient():
    trainer = torch.tensor([[500.0, -500.0]], requires_grad=True)
    w = mismatch_weights(trainer, torch.zeros(1, 2), torch.ones(1, 2, dtype=torch.bool), "token_truncate", 2.0)
    assert torch.isfinite(w).all() and w.tolist() == [[2.0, 0.0]] and not w.requires_grad


def test_mismatch_figures_by_hand():
    engine = torch.tensor([[0.0, 0.0, 0.05], [0.0, 0.0, 0.0]])
    trainer = torch.tensor([[0.3, -0.02, 0.0], [0.0, 7.0, 7.0]])  # gaps 0.3, 0.02, 0.05, 0 on valid tokens
    w = mismatch_weights(trainer, engine, MASK, "token_truncate", 1.2)  # exp(0.3) = 1.35 is capped
    stats = mismatch_stats(trainer, engine, MASK, w)
    assert stats["mismatch/abs_diff_mean"] == pytest.approx((0.3 + 0.02 + 0.05) / 4)
    assert stats["mismatch/abs_diff_max"] == pytest.approx(0.3)
    assert MISMATCH_THRESHOLD == 0.1 and stats["mismatch/frac_over"] == pytest.approx(1 / 4)
    assert stats["mismatch/is_corrected_frac"] == pytest.approx(1 / 4)
    assert stats["mismatch/is_weight_min"] == pytest.approx(math.exp(-0.05))
    assert stats["mismatch/is_weight_mean"] == pytest.approx((1.2 + math.exp(-0.02) + math.exp(-0.05) + 1) / 4)
    assert "mismatch/is_weight_mean" not in mismatch_stats(trainer, engine, MASK)  # correction off: gap only


def test_weights_multiply_the_surrogate_per_token_not_the_kl():
    logp = torch.tensor([[-1.0, -2.0, -0.5]], requires_grad=True)
    adv, mask = torch.tensor([[1.0, -1.0, 2.0]]), torch.ones(1, 3, dtype=torch.bool)
    w = torch.tensor([[2.0, 0.0, 0.5]])
    ref = logp.detach() - 0.1
    plain, _ = policy_loss("clip", logp=logp, logp_old=logp.detach(), advantages=adv, mask=mask,
                           loss_agg="token_mean", logp_ref=ref, beta=0.5)
    weighted, _ = policy_loss("clip", logp=logp, logp_old=logp.detach(), advantages=adv, mask=mask,
                              loss_agg="token_mean", logp_ref=ref, beta=0.5, is_weights=w)
    kl = math.exp(-0.1) + 0.1 - 1  # k3 per token, unweighted
    assert plain.item() == pytest.approx((-1 + 1 - 2) / 3 + 0.5 * kl)  # ratio 1: surrogate -A
    assert weighted.item() == pytest.approx((-1 * 2 + 1 * 0 - 2 * 0.5) / 3 + 0.5 * kl)
    weighted.backward()
    kl_grad = 0.5 * (1 - math.exp(-0.1))  # d k3 / d logp, the same on every token: not weighted
    torch.testing.assert_close(logp.grad, (torch.tensor([[-2.0, 0.0, -1.0]]) + kl_grad) / 3)


def _batch(logp_old):
    return RolloutBatch(prompt_ids=[[1], [1]], completion_ids=torch.zeros(2, 3, dtype=torch.long), mask=MASK,
                        texts=["", ""], offsets=[[], []], group_ids=torch.zeros(2, dtype=torch.long),
                        finished=torch.ones(2, dtype=torch.bool), logp_old=logp_old)


def test_the_trainer_corrects_by_default_only_when_an_engine_reports_log_probs():
    for preset in ("bot_grpo", "grpo", "dapo", "gspo", "dr_grpo"):
        algo = load_config(None, algo=preset).algo
        weights, stats = engine_mismatch(algo, _batch(ENGINE), TRAINER)
        torch.testing.assert_close(weights, mismatch_weights(TRAINER, ENGINE, MASK, "token_truncate", 2.0))
        assert stats["mismatch/abs_diff_max"] == pytest.approx(LN(3.0))
    assert engine_mismatch(AlgoConfig(), _batch(None), TRAINER) == (None, {})  # the trainer's own forward sampled
    weights, stats = engine_mismatch(AlgoConfig(mismatch_is="off"), _batch(ENGINE), TRAINER)
    assert weights is None and "mismatch/abs_diff_max" in stats and "mismatch/is_weight_mean" not in stats
    weights, _ = engine_mismatch(AlgoConfig(mismatch_is="token_mask", mismatch_is_max=2.5), _batch(ENGINE), TRAINER)
    torch.testing.assert_close(weights, torch.tensor([[0.0, 0.5, 1.0], [1.5, 0.0, 0.0]]))


def test_a_token_the_engine_did_not_choose_counts_as_the_trainers_own():
    forced = ENGINE.clone()
    forced[0, 0] = float("nan")  # a close tag the thinking budget forced inside vLLM
    weights, stats = engine_mismatch(AlgoConfig(), _batch(forced), TRAINER)
    torch.testing.assert_close(weights, torch.tensor([[1.0, 0.5, 1.0], [1.5, 0.0, 0.0]]))
    assert stats["mismatch/abs_diff_max"] == pytest.approx(LN(2.0))  # row 0's ratio 3 left out; 0.5 is the largest gap


def test_bad_mismatch_settings_are_one_clear_line():
    with pytest.raises(UserError, match="algo.mismatch_is"):
        load_config(None, sets=["algo.mismatch_is=tis"])
    with pytest.raises(UserError, match="algo.mismatch_is_max"):
        load_config(None, sets=["algo.mismatch_is_max=0"])
    with pytest.raises(UserError, match="algo.mismatch_is_max"):
        load_config(None, sets=["algo.mismatch_is_min=3", "algo.mismatch_is_max=2"])


def test_a_stale_batch_trains_against_the_behaviour_log_probs_with_no_weight_on_top():
    """rollout.max_staleness: logp_old is the sampling policy's (ENGINE here) as given; truncate modes
    (and auto) add no weight, since the ratio against the behaviour policy already corrects."""
    for mode in ("auto", "token_truncate", "sequence_truncate", "off"):
        logp_old, weights, figures = stale_inputs(AlgoConfig(mismatch_is=mode), ENGINE, None, MASK)
        assert torch.equal(logp_old, ENGINE) and weights is None and figures == {}


def test_a_stale_batch_under_a_mask_mode_zeroes_tokens_outside_the_band_and_never_reweights():
    # current / behaviour ratios 3, 0.5, 1 | 1.5: outside [0.6, 2] go the 3 and the 0.5
    logp_old, weights, figures = stale_inputs(AlgoConfig(mismatch_is="token_mask", mismatch_is_min=0.6), ENGINE,
                                              TRAINER, MASK)
    assert torch.equal(logp_old, ENGINE)
    torch.testing.assert_close(weights, torch.tensor([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]]))
    assert figures["mismatch/abs_diff_max"] == pytest.approx(LN(3.0))


def test_a_stale_tokens_missing_behaviour_log_prob_is_the_trainers():
    behaviour = ENGINE.clone()
    behaviour[0, 1] = float("nan")  # a close tag the thinking budget forced
    logp_old, weights, _ = stale_inputs(AlgoConfig(), behaviour, TRAINER, MASK)
    assert logp_old[0, 1] == TRAINER[0, 1] and not torch.isnan(logp_old).any() and weights is None
