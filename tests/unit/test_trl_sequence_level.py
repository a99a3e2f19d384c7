"""BoTGRPOTrainer refuses TRL's sequence-level importance sampling (GSPO) when the estimator gives
token credit: TRL's loss would weigh each completion by the mean of its token advantages."""

from __future__ import annotations

import importlib.util
from types import SimpleNamespace

import pytest
import torch

from botgrpo_cli.algos import ADVANTAGES

# TRL (and the vLLM it imports) load inside the tests that need them: collecting this file stays cheap
# for the test processes that do not run it.
pytestmark = pytest.mark.skipif(importlib.util.find_spec("trl") is None, reason="trl is not installed")


def test_sequence_level_ratio_averages_token_advantages_away():
    """What TRL's sequence-level loss does: the gradient of ratio_i * A[i,t] summed over a row is
    sum_t A[i,t] times the same sequence gradient, so two rows with equal mean advantage train alike."""
    logp = torch.zeros(2, 3, requires_grad=True)
    ratio = torch.exp((logp - logp.detach()).mean(1, keepdim=True))  # (B, 1), as TRL's "sequence" level
    adv = torch.tensor([[3.0, -1.0, 1.0], [1.0, 1.0, 1.0]])  # different token credit, same mean
    (ratio * adv).sum().backward()
    assert torch.allclose(logp.grad[0], logp.grad[1])


def test_token_credit_is_decided_by_running_the_estimator():
    from botgrpo_cli.integrations.trl import gives_token_credit

    for name in ADVANTAGES:
        credit = gives_token_credit(name, {}, 1.0, 1.0)
        assert gives_token_credit(name, {}, 1.0, 0.0) is False  # outcome only: constant per completion
        assert credit == (name in ("bot_grpo", "pure")), name  # pure: its steps get their own credit
        assert gives_token_credit(name, {}, 1.0, 1.0, steps=False) == (name == "bot_grpo"), name  # one step


def test_trainer_refuses_gspo_with_token_credit_before_the_model_loads(tmp_path):
    from trl import GRPOConfig

    from botgrpo_cli.integrations.trl import BoTGRPOTrainer, ServiceReward

    reward = ServiceReward(SimpleNamespace(service="math"))  # never called: the refusal comes first
    args = GRPOConfig(output_dir=str(tmp_path), importance_sampling_level="sequence", use_cpu=True, report_to="none")
    with pytest.raises(ValueError, match="importance_sampling_level='sequence'.*token credit is lost"):
        BoTGRPOTrainer("no/such-model", reward_funcs=reward, args=args)
    with pytest.raises(ValueError, match="scale='groupp' is not valid"):
        BoTGRPOTrainer("no/such-model", reward_funcs=reward, args=args, advantage_options={"scale": "groupp"})
