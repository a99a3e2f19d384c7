"""TRL 1.16's loss_type values, delta, use_bias_correction_kl, top_entropy_quantile, off_policy_mask_threshold
and mask_truncated_completions: botgrpo's loss and its gradient equal TRL's own GRPOTrainer._compute_loss on
the same fixed tensors, each TRL config going through algos.trl_loss_types.algo_fields and the trainer's
kept_tokens -> policy_loss path.

TRL's method runs unchanged on `TrlLoss`, an object carrying exactly the attributes it reads (listed
there). The model forward is the one thing it stands in for: `_get_per_token_logps_and_entropies`
returns fixed log-probs (a leaf tensor, so both gradients are d loss / d logp) and entropies. The
accelerator is one process's: gather, reduce and pad_across_processes are the identity, as accelerate's
are with one process.
"""

from __future__ import annotations

import importlib.util
from collections import defaultdict
from types import SimpleNamespace

import pytest
import torch

from botgrpo_cli.algos import policy_loss
from botgrpo_cli.algos.trl_loss_types import TRL_DEFAULTS, algo_fields
from botgrpo_cli.config import AlgoConfig, Config, checked
from botgrpo_cli.errors import UserError
from botgrpo_cli.trainer.update import kept_tokens

pytestmark = pytest.mark.skipif(importlib.util.find_spec("trl") is None, reason="trl is not installed")

B, T, MAX_LEN = 6, 7, 9
LOSS_TYPES = ("grpo", "dr_grpo", "dapo", "bnpo", "cispo", "sapo", "luspo", "vespo")


class OneProcess:
    num_processes = 1
    sync_gradients = True

    def gather(self, x):
        return x

    gather_for_metrics = gather

    def reduce(self, x, reduction="sum"):
        return x

    def pad_across_processes(self, x, dim=0, pad_index=0):
        return x


def trl_loss(fields: dict, logp: torch.Tensor, entropy: torch.Tensor, inputs: dict,
             engine_weights: bool = False) -> torch.Tensor:
    """TRL's GRPOTrainer._compute_loss on an object with the attributes it reads; engine_weights: as
    with vLLM and vllm_importance_sampling_correction (inputs["importance_sampling_ratio"])."""
    from trl import GRPOConfig, GRPOTrainer

    args = GRPOConfig(output_dir="unused", use_cpu=True, report_to="none", max_completion_length=MAX_LEN,
                      **fields)

    class TrlLoss:  # exactly what _compute_loss (and the helpers it calls) read
        _compute_loss = GRPOTrainer._compute_loss
        get_high_entropy_mask = GRPOTrainer.get_high_entropy_mask
        get_off_policy_mask = staticmethod(GRPOTrainer.get_off_policy_mask)
        get_gamma_weights = staticmethod(GRPOTrainer.get_gamma_weights)

        def _get_per_token_logps_and_entropies(self, *args, **kwargs):
            return logp, entropy, None

    t = TrlLoss()
    t.args, t.loss_type, t.beta = args, args.loss_type, args.beta
    t.epsilon_low, t.epsilon_high = args.epsilon, args.epsilon_high if args.epsilon_high is not None else args.epsilon
    t.importance_sampling_level, t.max_completion_length = args.importance_sampling_level, args.max_completion_length
    t.top_entropy_quantile, t.off_policy_mask_threshold = args.top_entropy_quantile, args.off_policy_mask_threshold
    t.aux_loss_enabled = False
    t.use_vllm = t.vllm_importance_sampling_correction = engine_weights
    t._entropy_bonus_enabled = t.use_adaptive_entropy = False
    t.model, t.accelerator = SimpleNamespace(training=True), OneProcess()
    t.current_gradient_accumulation_steps, t._metrics = 1, defaultdict(lambda: defaultdict(list))
    return t._compute_loss(None, inputs)


def batch(seed: int, token_advantages: bool):
    """Fixed tensors: ragged completions, log-probs 0.3 nats or so off the behaviour policy's (clips and
    masks act), a reference policy, entropies, advantages per completion or per token."""
    g = torch.Generator().manual_seed(seed)
    lengths = torch.tensor([7, 5, 1, 6, 3, 7])
    mask = torch.arange(T)[None, :] < lengths[:, None]
    logp = -torch.rand(B, T, generator=g) * 2 - 0.05
    old = logp + 0.3 * torch.randn(B, T, generator=g)
    ref = logp + 0.2 * torch.randn(B, T, generator=g)
    entropy = torch.rand(B, T, generator=g) * 3
    adv = torch.randn(B, T, generator=g) if token_advantages else torch.randn(B, 1, generator=g).expand(B, T)
    return logp, old, ref, entropy, adv.contiguous(), mask


def both(fields: dict, seed: int = 0, token_advantages: bool = False, finished: torch.Tensor | None = None,
         is_weights: torch.Tensor | None = None):
    """(TRL's loss, its gradient), (ours, ours) on batch(seed)."""
    logp0, old, ref, entropy, adv, mask = batch(seed, token_advantages)
    trl_mask = mask if finished is None else mask & finished[:, None]  # TRL zeroes a truncated row's mask
    theirs = logp0.clone().requires_grad_()
    inputs = {"prompt_ids": torch.zeros(B, 1, dtype=torch.long), "prompt_mask": torch.ones(B, 1, dtype=torch.long),
              "completion_ids": torch.zeros(B, T, dtype=torch.long), "completion_mask": trl_mask.long(),
              "advantages": adv if token_advantages else adv[:, 0], "old_per_token_logps": old,
              "ref_per_token_logps": ref, "num_items_in_batch": trl_mask.sum()}
    if is_weights is not None:  # TRL's are 1 on padding (a masked log-prob gap), botgrpo's 0 (mismatch_weights)
        inputs["importance_sampling_ratio"] = torch.where(mask, is_weights, 1.0)
        is_weights = torch.where(mask, is_weights, 0.0)
    loss_t = trl_loss(fields, theirs, entropy, inputs, engine_weights=is_weights is not None)
    loss_t.backward()

    values, _ = algo_fields(fields)
    a = checked(Config(algo=AlgoConfig(name="grpo", advantage="grpo", **values))).algo
    if a.mask_truncated and finished is not None:
        mask = mask & finished[:, None]  # what trainer.loop does with RolloutBatch.finished
    ours = logp0.clone().requires_grad_()
    keep, _ = kept_tokens(a, ours, old, adv, entropy, mask)
    loss_o, _ = policy_loss(a.loss, logp=ours, logp_old=old, advantages=adv, mask=mask, loss_agg=a.loss_agg,
                            logp_ref=ref if a.beta > 0 else None, beta=a.beta, max_completion_length=MAX_LEN,
                            keep=keep, kl_bias_correction=a.kl_bias_correction, is_weights=is_weights,
                            **a.loss_options)
    loss_o.backward()
    return (loss_t.detach(), theirs.grad), (loss_o.detach(), ours.grad)


def assert_same(fields: dict, **kw):
    (lt, gt), (lo, go) = both(fields, **kw)
    torch.testing.assert_close(lo, lt, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(go, gt, rtol=1e-5, atol=1e-7)
    assert gt.abs().sum() > 0  # a gradient to compare


def _level(loss_type: str) -> dict:
    return {"importance_sampling_level": "sequence"} if loss_type == "luspo" else {}  # luspo's paper setup


@pytest.mark.parametrize("loss_type", LOSS_TYPES)
def test_each_loss_type_equals_trl_with_its_defaults(loss_type):
    assert_same({"loss_type": loss_type, **_level(loss_type)})


@pytest.mark.parametrize("loss_type", LOSS_TYPES)
def test_each_loss_type_equals_trl_with_kl_and_bias_correction_and_options(loss_type):
    """beta > 0 with use_bias_correction_kl (TRL's default), clip widths, delta, sapo and vespo options."""
    fields = {"loss_type": loss_type, "beta": 0.05, "epsilon": 0.15, "epsilon_high": 0.25 if loss_type != "cispo" else 1.2,
              "delta": 1.1, "sapo_temperature_pos": 0.7, "sapo_temperature_neg": 1.3, "vespo_k_pos": 1.5,
              "vespo_lambda_neg": 2.5, **_level(loss_type)}
    assert_same(fields, seed=1)
    assert_same({**fields, "use_bias_correction_kl": False}, seed=2)


@pytest.mark.parametrize("loss_type", LOSS_TYPES)
def test_token_advantages_equal_trl_given_the_same_token_advantages(loss_type):
    """BoT-GRPO's (B, T) advantages through TRL's code (which takes them, as botgrpo's TRL trainer uses)."""
    assert_same({"loss_type": loss_type, "beta": 0.02, "off_policy_mask_threshold": 0.05,
                 "top_entropy_quantile": 0.5}, seed=3, token_advantages=True)


@pytest.mark.parametrize("loss_type", ["grpo", "dapo", "bnpo", "dr_grpo", "luspo"])
def test_sequence_level_ratio_equals_trl(loss_type):
    """importance_sampling_level="sequence" (GSPO's ratio) maps to the gspo loss, delta and KL correction included."""
    assert_same({"loss_type": loss_type, "importance_sampling_level": "sequence", "epsilon": 0.05, "delta": 1.02,
                 "beta": 0.03}, seed=5)


@pytest.mark.parametrize("loss_type", ["vespo", "dapo", "sapo"])
def test_engine_mismatch_weights_enter_as_trl(loss_type):
    """vLLM's importance weights (botgrpo's is_weights, TRL's importance_sampling_ratio): multiplied into the
    per-token loss, except vespo, whose sequence weight w takes their logs."""
    fields = {"loss_type": loss_type}
    weights = torch.rand(B, T, generator=torch.Generator().manual_seed(6)) * 1.5 + 0.25
    (lt, gt), (lo, go) = both(fields, is_weights=weights)
    (_, g_plain), _ = both(fields)
    assert not torch.allclose(gt, g_plain)  # the weights act on this batch
    torch.testing.assert_close((lo, go), (lt, gt), rtol=1e-5, atol=1e-7)


def test_delta_caps_the_unclipped_ratio_as_trl():
    (lt, gt), (lo, go) = both({"loss_type": "grpo", "delta": 1.05})
    (_, g_free), _ = both({"loss_type": "grpo"})
    assert not torch.allclose(gt, g_free)  # the cap acts on this batch
    torch.testing.assert_close((lo, go), (lt, gt), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("quantile", [0.0, 0.2, 0.5])
def test_top_entropy_quantile_equals_trl(quantile):
    (lt, gt), (lo, go) = both({"loss_type": "dapo", "top_entropy_quantile": quantile})
    torch.testing.assert_close((lo, go), (lt, gt), rtol=1e-5, atol=1e-7)
    assert 0 < int((go != 0).sum()) < int((both({"loss_type": "dapo"})[1][1] != 0).sum())  # some tokens dropped


@pytest.mark.parametrize("threshold", [0.0, 0.05, 10.0])
def test_off_policy_mask_equals_trl(threshold):
    (lt, gt), (lo, go) = both({"loss_type": "grpo", "off_policy_mask_threshold": threshold}, seed=4)
    torch.testing.assert_close((lo, go), (lt, gt), rtol=1e-5, atol=1e-7)


def test_mask_truncated_completions_equals_trl():
    """TRL zeroes a truncated completion's mask (its last token is no EOS); the loop masks rows not
    RolloutBatch.finished. Truncated rows leave the loss, and still count in grpo's mean over rows."""
    finished = torch.tensor([True, False, True, True, False, True])
    for loss_type in ("grpo", "dapo"):
        (lt, gt), (lo, go) = both({"loss_type": loss_type, "mask_truncated_completions": True}, finished=finished)
        torch.testing.assert_close((lo, go), (lt, gt), rtol=1e-5, atol=1e-7)
        assert bool((go[~finished] == 0).all())


def test_algo_fields_reads_every_loss_field_and_refuses_what_has_no_counterpart():
    values, used = algo_fields(dict(TRL_DEFAULTS))
    assert used == set(TRL_DEFAULTS)
    assert (values["loss"], values["loss_agg"], values["beta"]) == ("clip", "dapo", 0.0)
    assert values["kl_bias_correction"] is False  # no KL term to correct at beta = 0
    assert algo_fields({"scale_rewards": False})[0]["advantage_options"] == {"scale": "none"}
    assert algo_fields({"multi_objective_aggregation": "normalize_then_sum", "scale_rewards": "group"})[0][
        "advantage_options"] == {"scale": "batch"}  # TRL's GDPO normalises the sum over the batch
    assert algo_fields({"importance_sampling_level": "sequence"})[0]["loss"] == "gspo"
    with pytest.raises(UserError, match="loss_type='sapo' has no counterpart here"):
        algo_fields({"loss_type": "sapo", "importance_sampling_level": "sequence"})
    with pytest.raises(UserError, match="loss_type='ppo' is not one TRL 1.16 defines"):
        algo_fields({"loss_type": "ppo"})
