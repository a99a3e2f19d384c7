"""The pools an evaluation scores through, opened one way for `botgrpo eval` and `bench eval`: the
reward a RewardConfig names (reward_client.opening.open_reward, as training opens it) and, for a
task that renders, its render service's pool for the render pass."""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from botgrpo_cli.evaluation.sampling import Scoring

if TYPE_CHECKING:  # the config is read, never imported at run time
    from botgrpo_cli.config import RewardConfig

SAVE_DIR = "BOTGRPO_RENDER_SAVE_DIR"  # the render service's setting: where it saves screenshots


def own_reward(reward: RewardConfig) -> bool:
    """The settings name no reward of their own: the task's service scores."""
    return not (reward.service or reward.command or reward.function or reward.url or reward.services)


def open_scoring(stack: ExitStack, task: Any, reward: RewardConfig, render: bool, shots_root: Path | None = None,
                 wrap: Callable[[Any], Any] = lambda pool: pool) -> Scoring:
    """The task's scoring with every pool entered on `stack`: the reward `reward` names (the task's
    service when it names none) and, with `render`, the task's render service (the same pool where
    the task's own service renders). `shots_root`: where the render service saves screenshots;
    `wrap`: applied to the reward's pool before it is used (eval records each request)."""
    from botgrpo_cli.reward_client import RewardPool
    from botgrpo_cli.reward_client.opening import open_reward

    saving = {SAVE_DIR: str(shots_root)} if shots_root is not None else {}
    renders_itself = own_reward(reward) and task.service == task.render_service
    pool = wrap(stack.enter_context(open_reward(reward, task.service, env=saving if renders_itself else None)))
    render_pool = None
    if render and task.render_service is not None:
        render_pool = pool if renders_itself else stack.enter_context(
            RewardPool(task.render_service, workers=reward.workers, env=saving))
    return Scoring.of_task(task, pool, render_pool, deadline_ms=reward.deadline_ms, options=reward.options,
                           save_root=shots_root)
