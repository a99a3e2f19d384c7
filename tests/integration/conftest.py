"""Integration fixtures: what a training step computed, kept for the tests to compare."""

from __future__ import annotations

import pytest

from botgrpo_cli.trainer import ahead, loop


@pytest.fixture
def seen(monkeypatch):
    """Each step's batch and (mask, advantages), as the trainer computed them."""
    out: dict[str, list] = {"batches": [], "advantages": []}
    collect, advantages = ahead.collect_rollouts, loop.compute_advantages  # the step's rollouts come through ahead.py

    def keep_batch(s, step):
        ro = collect(s, step)
        out["batches"].append(ro.batch)
        return ro

    def keep_advantages(name, **kwargs):
        adv = advantages(name, **kwargs)
        out["advantages"].append((kwargs["mask"].clone(), adv.clone()))
        return adv

    monkeypatch.setattr(ahead, "collect_rollouts", keep_batch)
    monkeypatch.setattr(loop, "compute_advantages", keep_advantages)
    return out


@pytest.fixture
def scoring(monkeypatch):
    """Each step's (raw scores, ok, shaped scores) and the scores its advantages started from."""
    out: dict[str, list] = {"scores": [], "advantage_scores": []}
    to_token_rewards, advantages = loop.to_token_rewards, loop.compute_advantages

    def keep_scores(scored, *args, **kwargs):
        tr = to_token_rewards(scored, *args, **kwargs)
        out["scores"].append((scored.scores.clone(), scored.ok.clone(), tr.scores.clone()))
        return tr

    def keep_advantage_scores(name, **kwargs):
        out["advantage_scores"].append(kwargs["scores"].clone())
        return advantages(name, **kwargs)

    monkeypatch.setattr(loop, "to_token_rewards", keep_scores)
    monkeypatch.setattr(loop, "compute_advantages", keep_advantage_scores)
    return out
