"""verl adapters (verl 0.9.x): the `bot_grpo` advantage estimator and a dense token reward manager.

Importing this module registers both with verl when verl is importable:
- advantage estimator `bot_grpo` (`algorithm.adv_estimator=bot_grpo`), in verl's core_algos registry;
- reward manager `botgrpo` (`reward.reward_manager.name=botgrpo`), in verl's reward-loop registry.
Have verl import it with `VERL_USE_EXTERNAL_MODULES=botgrpo_cli.integrations.verl`.
"""

from __future__ import annotations

import logging
from typing import Any, Sequence

import numpy as np
import torch

from botgrpo_cli.algos import compute_advantages
from botgrpo_cli.integrations.service import ServiceScorer
from botgrpo_cli.reward_client.scored import Scored, to_token_rewards
from botgrpo_rewards.protocol import DEFAULT_DEADLINE_MS

NAME = "bot_grpo"  # advantage estimator name in verl
REWARD_MANAGER = "botgrpo"  # reward manager name in verl
log = logging.getLogger("botgrpo.integrations.verl")


def _option(config: Any, key: str, default: Any) -> Any:
    """A field of verl's AlgoConfig / DictConfig / dict, or `default`."""
    if config is None:
        return default
    if hasattr(config, "get"):
        return config.get(key, default)
    return getattr(config, key, default)


def bot_grpo_advantage(token_level_rewards: torch.Tensor, response_mask: torch.Tensor, index: Sequence,
                       epsilon: float = 1e-4, norm_adv_by_std_in_grpo: bool | None = None, config: Any = None,
                       **_: Any) -> tuple[torch.Tensor, torch.Tensor]:
    """BoT-GRPO in verl's estimator signature -> (advantages, returns), both (B, T), as verl's GRPO.

    token_level_rewards (B, T): dense token rewards r (e.g. from the `botgrpo` reward manager);
    response_mask (B, T); index: group id per row (verl's uid array). norm_adv_by_std_in_grpo
    (default: the config's, else True) selects scale=group, False scale=none (Dr. GRPO). epsilon
    defaults to botgrpo's 1e-4 (verl's GRPO uses 1e-6; verl passes none to registered estimators).
    Other keyword arguments verl may pass (reward_baselines, ...) are not used.
    """
    norm = norm_adv_by_std_in_grpo
    if norm is None:
        norm = _option(config, "norm_adv_by_std_in_grpo", True)
    _, groups = np.unique(np.asarray(index, dtype=object).astype(str), return_inverse=True)
    mask = response_mask.bool()
    lengths = mask.sum(1).clamp(min=1)
    scores = (token_level_rewards * mask).sum(1) / lengths  # (B,) mean token reward; bot_grpo reads r only
    adv = compute_advantages(NAME, token_rewards=token_level_rewards, scores=scores, mask=mask,
                             group_ids=torch.as_tensor(groups.reshape(-1), device=mask.device),
                             eps=epsilon, scale="group" if norm else "none")
    adv = adv.to(token_level_rewards.dtype)
    return adv, adv


def token_reward_rows(scored: Scored, offsets: list[list[tuple[int, int]]], lambda_seq: float = 1.0,
                      lambda_tok: float = 1.0) -> list[list[float]]:
    """Dense token rewards per response, r = lambda_seq * score + lambda_tok * rho, one value per
    response token; rows the service could not score are all 0 (verl has no per-row mask here)."""
    r = to_token_rewards(scored, offsets, None, lambda_seq, lambda_tok).r  # (B, T)
    return [row[:len(o)].tolist() for row, o in zip(r, offsets)]


def _reference(non_tensor: dict) -> dict:
    """The service's `reference`: extra_info["reference"] if given, else {"answer": ground_truth}."""
    extra = non_tensor.get("extra_info") or {}
    if isinstance(extra, dict) and isinstance(extra.get("reference"), dict):
        return dict(extra["reference"])
    truth = (non_tensor.get("reward_model") or {}).get("ground_truth")
    return {} if truth is None else {"answer": str(truth)}


class DenseServiceReward:
    """Dense token rewards for verl rows from a botgrpo reward service (no verl import needed).

    Settings (verl config `reward.botgrpo`): service (math), workers (1), url, options ({}),
    deadline_ms (the protocol's DEFAULT_DEADLINE_MS), lambda_seq, lambda_tok (1.0).
    """

    def __init__(self, tokenizer: Any, settings: dict | None = None):
        from botgrpo_cli.rollout import OffsetDecoder

        s = dict(settings or {})
        self.tokenizer, self.decoder = tokenizer, OffsetDecoder(tokenizer)
        self.lambdas = (float(s.get("lambda_seq", 1.0)), float(s.get("lambda_tok", 1.0)))
        self.scorer = ServiceScorer(s.get("service", "math"), workers=int(s.get("workers", 1)), url=s.get("url"),
                                    options=s.get("options") or {}, deadline_ms=int(s.get("deadline_ms", DEFAULT_DEADLINE_MS)))

    def score_row(self, prompt_ids: Sequence[int], response_ids: Sequence[int], non_tensor: dict) -> dict:
        """One response (valid ids only) -> verl's run_single result: reward_score is the list of its
        token rewards; reward_extra_info has the sequence score (NaN if not scored) and `scored`."""
        text, offsets = self.decoder.decode(list(response_ids))
        prompt = self.tokenizer.decode(list(prompt_ids), skip_special_tokens=True)
        scored = self.scorer.score([prompt], [text], [_reference(non_tensor)])
        score = scored.values[0]
        return {"reward_score": token_reward_rows(scored, [offsets], *self.lambdas)[0],
                "reward_extra_info": {"score": float("nan") if score is None else score,
                                      "scored": float(score is not None)}}

    def close(self) -> None:
        self.scorer.close()


def assemble(responses: torch.Tensor, rows: list[list[float]]) -> torch.Tensor:
    """Per-response token reward lists -> (B, T) float32 like `responses`, zero past each response."""
    out = torch.zeros_like(responses, dtype=torch.float32)
    for i, row in enumerate(rows):
        out[i, : len(row)] = torch.as_tensor(row, dtype=torch.float32)
    return out


def register() -> None:
    """Register `bot_grpo` with verl's advantage estimators (idempotent), and the `botgrpo` reward
    manager where verl's reward loop imports (it needs verl's full install: ray, aiohttp, ...)."""
    from verl.trainer.ppo.core_algos import ADV_ESTIMATOR_REGISTRY, register_adv_est

    if ADV_ESTIMATOR_REGISTRY.get(NAME) is not bot_grpo_advantage:
        register_adv_est(NAME)(bot_grpo_advantage)
    try:
        from verl.experimental.reward_loop.reward_manager import registry
    except ModuleNotFoundError as err:
        log.warning("verl's reward loop cannot be imported (%s): reward manager %r is not registered", err,
                    REWARD_MANAGER)
        return
    if REWARD_MANAGER not in registry.REWARD_MANAGER:
        registry.register(REWARD_MANAGER)(_reward_manager_class())


def _reward_manager_class() -> type:
    """verl's reward-loop manager shape: `run_single(data)` per response, `assemble_rm_scores` per batch."""
    from omegaconf import OmegaConf
    from verl.experimental.reward_loop.reward_manager.base import RewardManagerBase

    class BoTRewardManager(RewardManagerBase):
        """`reward.reward_manager.name=botgrpo`: dense token rewards from a botgrpo reward service."""

        def __init__(self, config: Any, tokenizer: Any, compute_score: Any = None, **_: Any):
            super().__init__(config, tokenizer, compute_score)
            settings = OmegaConf.select(config, "reward.botgrpo", default=None)
            self.dense = DenseServiceReward(tokenizer,
                                            OmegaConf.to_container(settings, resolve=True) if settings else {})

        def _score(self, data: Any) -> dict:
            item = data[-1]  # multi-sequence outputs: the last sequence is scored, as verl's naive manager
            response, prompt, attention = item.batch["responses"], item.batch["prompts"], item.batch["attention_mask"]
            n = int(attention[-response.shape[-1]:].sum())
            prompt_ids = prompt[attention[: prompt.shape[-1]].bool()]
            return self.dense.score_row(prompt_ids.tolist(), response[:n].tolist(), item.non_tensor_batch)

        async def run_single(self, data: Any) -> dict:
            return await self.loop.run_in_executor(None, self._score, data)

        @classmethod
        def assemble_rm_scores(cls, data: Any, scores: list) -> torch.Tensor:
            return assemble(data.batch["responses"], scores)

    return BoTRewardManager


try:  # registering is the point of importing this module inside verl; without verl the functions still work
    register()
except ModuleNotFoundError as err:
    if err.name != "verl":  # verl is there but one of its own dependencies is missing: say which
        raise
