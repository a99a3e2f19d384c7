"""algo.reward_aggregation=normalize_then_sum (GDPO): two reward functions' scores, combined as the trainer
combines them (reward_client.functions.combine), recombined by trainer.gdpo and turned into advantages by
grpo with scale=batch (what algos.trl_loss_types maps TRL's GDPO to), equal TRL 1.16's advantages.

TRL computes them inline in GRPOTrainer._generate_and_score_completions (it needs a generation to run):
`trl_gdpo_advantages` below follows its normalize_then_sum branch line by line, with TRL's own nanstd."""

from __future__ import annotations

import importlib.util
import math

import pytest
import torch

from botgrpo_cli.algos import compute_advantages
from botgrpo_cli.algos.shaping import normalize_then_sum
from botgrpo_cli.config import AlgoConfig, Config, RewardConfig, checked
from botgrpo_cli.errors import UserError
from botgrpo_cli.reward_client.functions import combine
from botgrpo_cli.reward_client.scored import Scored
from botgrpo_cli.trainer.gdpo import gdpo_scored
from botgrpo_rewards.protocol import ScoreResponse

G = 4  # completions per prompt
NAMES, WEIGHTS = ("correct", "format"), (1.0, 0.5)
# (B, F) scores of 3 prompts x 4 completions; NaN: the function returned None for that completion
PER_FUNCTION = torch.tensor([[1.0, 0.2], [0.0, 0.9], [1.0, math.nan], [0.0, 0.1],
                             [0.0, 1.0], [0.0, 0.0], [0.0, 1.0], [0.0, 0.5],  # correct constant: only format moves
                             [2.0, 0.3], [5.0, 0.3], [-1.0, 0.3], [math.nan, 0.7]])


def trl_gdpo_advantages(rewards_per_func: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    from trl.trainer.utils import nanstd

    grouped = rewards_per_func.view(-1, G, rewards_per_func.shape[1])
    mean_k = torch.nanmean(grouped, dim=1, keepdim=True)
    std_k = nanstd(grouped, dim=1, keepdim=True)
    reward_k = ((grouped - mean_k) / (std_k + 1e-4)).view(-1, rewards_per_func.shape[1])
    rewards = (reward_k * weights.unsqueeze(0)).nansum(dim=1)
    rewards[torch.isnan(rewards_per_func).all(dim=1)] = torch.nan
    advantages = (rewards - torch.nanmean(rewards)) / (nanstd(rewards).expand_as(rewards) + 1e-4)
    return torch.nan_to_num(advantages, nan=0.0)


def scored_batch() -> Scored:
    """Each completion's response as the trainer's FunctionPool builds it from its functions' verdicts."""
    def part(v: float):
        return None if math.isnan(v) else ScoreResponse(id=0, status="ok", score=v)

    return Scored([combine(i, NAMES, WEIGHTS, [part(float(v)) for v in row], {}, {})
                   for i, row in enumerate(PER_FUNCTION)])


@pytest.mark.skipif(importlib.util.find_spec("trl") is None, reason="trl is not installed")
def test_gdpo_advantages_equal_trl_with_two_reward_functions():
    scored = scored_batch()
    groups = torch.arange(len(PER_FUNCTION)) // G
    shaped = gdpo_scored(scored, dict(zip(NAMES, WEIGHTS)), groups)
    assert torch.equal(scored.scores, scored_batch().scores)  # the raw scores (what is logged) stay
    mask = torch.ones(len(PER_FUNCTION), 3, dtype=torch.bool)
    ours = compute_advantages("grpo", token_rewards=shaped.scores[:, None].expand(-1, 3), scores=shaped.scores,
                              mask=mask, group_ids=groups, scale="batch")
    want = trl_gdpo_advantages(PER_FUNCTION, torch.tensor(WEIGHTS))
    torch.testing.assert_close(ours[:, 0], want, rtol=1e-4, atol=1e-4)
    # and not what summing first gives: GDPO is a different advantage on this batch
    summed = compute_advantages("grpo", token_rewards=scored.scores[:, None].expand(-1, 3), scores=scored.scores,
                                mask=mask, group_ids=groups)
    assert not torch.allclose(summed[:, 0], want, atol=1e-2)


def test_each_function_is_normalised_within_its_group():
    out = normalize_then_sum(torch.tensor([[1.0, 10.0], [3.0, 30.0], [5.0, 5.0], [5.0, 7.0]]),
                             torch.tensor([1.0, 2.0]), torch.tensor([0, 0, 1, 1]))
    def z(dev: float) -> float:  # two members: each is one Bessel std (|dev| sqrt 2) from the mean
        return dev / (abs(dev) * math.sqrt(2) + 1e-4)

    want = [-z(1) - 2 * z(10), z(1) + 2 * z(10), 0 - 2 * z(1), 0 + 2 * z(1)]  # a constant function adds 0
    torch.testing.assert_close(out, torch.tensor(want))
    assert torch.isnan(normalize_then_sum(torch.tensor([[math.nan], [1.0]]), torch.ones(1), torch.zeros(2)))[0]


def test_config_refuses_gdpo_with_one_reward_function():
    with pytest.raises(UserError, match="algo.reward_aggregation is normalize_then_sum.*needs two or more"):
        checked(Config(algo=AlgoConfig(reward_aggregation="normalize_then_sum"),
                       reward=RewardConfig(function="pkg.mod:f")))
    ok = checked(Config(algo=AlgoConfig(reward_aggregation="normalize_then_sum"),
                        reward=RewardConfig(function=["pkg.mod:f", "pkg.mod:g"])))
    assert ok.algo.reward_aggregation == "normalize_then_sum"


def test_a_reward_with_one_score_is_refused_at_the_step():
    with pytest.raises(UserError, match="needs the scores of two or more reward functions"):
        gdpo_scored(scored_batch(), {}, torch.zeros(len(PER_FUNCTION), dtype=torch.long))
