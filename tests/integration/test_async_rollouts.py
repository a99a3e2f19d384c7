"""Asynchronous rollouts (rollout.max_staleness) on the tiny arith model and its math service: the
producer at bound 0 is today's loop to the metric, a bound of 2 is kept with the staleness logged,
off-policy batches carry the sampling copy's log-probs, and kill -9 + --resume trains no batch twice."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from botgrpo_cli.config import load_config
from botgrpo_cli.trainer import train
from botgrpo_cli.trainer.ahead import Ahead, InTurn
from botgrpo_cli.trainer.loop import train_step
from botgrpo_cli.trainer.session import open_session

SMALL = ["run.task=arith_synth", "rollout.prompts_per_step=2", "rollout.group_size=2", "rollout.max_new_tokens=12",
         "run.threads=1", "log.tensorboard=false", "run.save_every=0", "log.samples_every=0", "optim.lr=1e-2",
         "optim.micro_batch_size=4"]


VARIED = f"{Path(__file__).resolve().parents[1] / 'fixtures' / 'varied_reward.py'}:alternating"


@pytest.fixture(scope="module")
def pool():
    """The math service the runs here score with, started once."""
    from botgrpo_cli.reward_client import RewardPool

    with RewardPool("math", workers=1) as running:
        yield running


def _cfg(model: Path, out: Path, *sets: str):
    cfg = load_config(None, algo="grpo", sets=[*SMALL, *sets])
    cfg.model.name_or_path, cfg.run.out_dir = str(model), str(out)
    return cfg


def _steps(cfg, source_of, steps: int, pool) -> list[dict]:
    """Train `steps` steps through the source source_of(session) makes; each step's metrics."""
    with open_session(cfg, pool=pool) as s:
        source = source_of(s)
        try:
            return [train_step(s, step, None, source=source) for step in range(1, steps + 1)]
        finally:
            source.close()


def _comparable(metrics: dict) -> dict:
    return {k: v for k, v in metrics.items() if not k.startswith(("time/", "async/", "perf/"))}


def test_the_producer_at_bound_zero_is_the_synchronous_loop_metric_for_metric(tiny_arith_model_dir, tmp_path):
    """Bound 0 through the producer thread and the engine's own weight copy gives the very metrics of
    today's loop (generate, score, update in turn): same seeds, prompts, tokens and updates."""
    varied = [f"reward.function={VARIED}", "reward.workers=1"]  # every group's scores differ: the weights move
    sync = _steps(_cfg(tiny_arith_model_dir, tmp_path / "a", *varied), InTurn, 2, None)
    cfg = _cfg(tiny_arith_model_dir, tmp_path / "b", "rollout.max_staleness=1", *varied)  # sampled from a copy
    ahead = _steps(cfg, lambda s: Ahead(s, 1, 2, bound=0), 2, None)
    assert sync[1]["grad_norm"] > 0
    assert [_comparable(m) for m in ahead] == [_comparable(m) for m in sync]
    assert all(m["async/staleness"] == 0 for m in ahead)


def test_bound_two_is_kept_and_logged(tiny_arith_model_dir, tmp_path, pool):
    cfg = _cfg(tiny_arith_model_dir, tmp_path / "run", "rollout.max_staleness=2", "run.steps=4")
    result = train(cfg, pool=pool)
    lines = result.metrics
    assert [r["step"] for r in lines] == [1, 2, 3, 4]
    for r in lines:
        assert 0 <= r["async/staleness"] <= r["async/staleness_max"] <= 2
        assert r["async/dropped"] == 0 and r["async/trainer_idle_s"] >= 0 and r["async/generator_idle_s"] >= 0
        # tokens over the producer's own generation time, not over the step's wait for the batch
        tokens = r["completion/length_mean"] * 4  # 2 prompts x 2 completions
        assert r["perf/tokens_per_s"] * r["async/generate_s"] == pytest.approx(tokens, rel=1e-6)
    # the first step's batch is always fresh (nothing trained yet)
    assert lines[0]["async/staleness"] == 0
    assert lines[-1]["async/staleness_mean"] == pytest.approx(sum(r["async/staleness"] for r in lines) / 4)


def test_a_stale_batch_trains_against_the_sampling_copys_logps(tiny_arith_model_dir, tmp_path):
    """Bound 1: the producer samples step 2 from the first weights before step 1 trains (the test
    waits for it), so step 2's batch is one step stale and its logp_old are the sampling copy's
    log-probs at version 0, not the trainer's current ones."""
    from botgrpo_cli.trainer.logprobs import batch_logps

    cfg = _cfg(tiny_arith_model_dir, tmp_path / "run", "rollout.max_staleness=1", f"reward.function={VARIED}",
               "reward.workers=1")  # scores differ in every group: the update moves the weights
    with open_session(cfg) as s:
        first = _copy_with(s.policy, [p.detach().clone() for p in s.policy.parameters()])
        source = Ahead(s, 1, 2, bound=1)
        try:
            with source.cond:
                source.cond.wait_for(lambda: 2 in source.ready or source.error is not None)
            metrics = train_step(s, 1, None, source=source)
            assert metrics["async/staleness"] == 0
            b = source.ready[2].batch
            assert b.policy_version == 0
            expected = batch_logps(first, b.prompt_ids, b.completion_ids, b.mask, s.engine.pad_id,
                                   cfg.rollout.temperature, cfg.optim.micro_batch_size)
            assert torch.equal(b.logp_old, expected)
            now = batch_logps(s.policy, b.prompt_ids, b.completion_ids, b.mask, s.engine.pad_id,
                              cfg.rollout.temperature, cfg.optim.micro_batch_size)
            assert not torch.equal(now, expected)  # the trainer moved: its current pass is not the behaviour
            metrics = train_step(s, 2, None, source=source)
            assert metrics["async/staleness"] == 1
            # the ratio at the update is pi_now / pi_behaviour, not 1 as against the current policy
            assert metrics["ratio_mean"] != 1.0
        finally:
            source.close()
        # closed, the producer leaves the engine's copy on the last update's weights (the final evaluation's)
        assert all(torch.equal(p, q) for p, q in zip(s.policy.parameters(), s.engine.model.parameters()))


def _copy_with(model, params):
    from copy import deepcopy

    other = deepcopy(model)
    with torch.no_grad():
        for p, v in zip(other.parameters(), params):
            p.copy_(v)
    return other


def test_kill_9_then_resume_trains_every_step_once(tiny_arith_model_dir, tmp_path, pool):
    """max_staleness=1 under `botgrpo train`: kill -9 once a checkpoint exists (the producer has a batch
    ahead by then, or is sampling it), then resume (what --resume runs, here in process) two steps
    further: every step is logged once and each checkpoint counts the prompts of its trained steps
    only (none trained twice, none skipped)."""
    out = tmp_path / "run"
    sets = [*SMALL, "rollout.max_staleness=1", "run.save_every=1", f"model.name_or_path={tiny_arith_model_dir}"]
    argv = [sys.executable, "-m", "botgrpo_cli", "train", "--algo", "grpo", "--out", str(out),
            *[a for s in sets for a in ("--set", s)]]
    env = {**os.environ, "COLUMNS": "300"}
    # far more steps than can finish before the kill, which lands once any checkpoint is written
    proc = subprocess.Popen([*argv, "--steps", "100000"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=env)
    deadline = time.monotonic() + 240

    def saved() -> list[int]:
        return [int(p.name.split("-")[1]) for p in (out / "checkpoints").glob("step-*") if p.is_dir()]

    while time.monotonic() < deadline and proc.poll() is None and not saved():
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    steps = max(saved()) + 2
    lines = train(_cfg(tiny_arith_model_dir, out, "rollout.max_staleness=1", "run.save_every=1", f"run.steps={steps}"),
                  resume=True, pool=pool).metrics
    assert [r["step"] for r in lines] == list(range(1, steps + 1))
    assert all(r["async/staleness"] <= 1 for r in lines)
    states = [json.loads((p / "state.json").read_text()) for p in (out / "checkpoints").glob("step-*")]
    assert {"step": steps, "data_position": steps * 2} in states  # rollout.prompts_per_step=2
    # every checkpoint counts the prompts of its trained steps only, never those the producer drew ahead
    assert all(st["data_position"] == 2 * st["step"] for st in states)
