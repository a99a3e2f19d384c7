"""Clients of reward services: a pool of child processes (stdio) and an HTTP client."""

from botgrpo_cli.reward_client.http import HttpRewardClient
from botgrpo_cli.reward_client.pool import RewardPool
from botgrpo_cli.reward_client.worker import ServiceStartError

__all__ = ["HttpRewardClient", "RewardPool", "ServiceStartError"]
