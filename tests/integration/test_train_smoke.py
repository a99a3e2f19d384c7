"""The trainer end to end on the bootstrapped tiny react_synth model with the real react service (Node)."""

from __future__ import annotations

import math
import os
from contextlib import contextmanager
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from botgrpo_cli.algos import PRESETS
from botgrpo_cli.config import load_config
from botgrpo_cli.reward_client.combined import CombinedPool, ServiceSpec
from botgrpo_cli.reward_client.opening import service_pool
from botgrpo_cli.trainer import loop, train
from botgrpo_cli.trainer.reports import TIMING_KEYS
from botgrpo_rewards.protocol import DEFAULT_DEADLINE_MS
from adamw_steps import assert_same_steps

TASK = "react_synth"
SMALL = ["rollout.prompts_per_step=2", "rollout.group_size=4", "rollout.max_new_tokens=48", "run.threads=1",
         "optim.micro_batch_size=3", "log.tensorboard=false", "reward.workers=1", "run.save_every=0"]


@pytest.fixture(scope="module")
def model_dir() -> Path:
    os.environ.setdefault("BOTGRPO_CACHE", str(Path(__file__).resolve().parents[2] / ".cache" / "botgrpo"))
    from botgrpo_cli.bootstrap import bootstrap

    return bootstrap(TASK)


@pytest.fixture(scope="module")
def pool(react_pool):
    return react_pool  # one react service for the session (starting Node + TypeScript costs seconds)


def _cfg(model_dir: Path, out: Path, algo: str, steps: int, *extra: str):
    cfg = load_config(None, algo=algo, sets=[*SMALL, f"run.task={TASK}", f"run.steps={steps}", *extra])
    cfg.model.name_or_path, cfg.run.out_dir = str(model_dir), str(out)
    return cfg


def _weights(path: Path) -> dict[str, torch.Tensor]:
    return load_file(str(path / "model.safetensors"))


def _final_weights(run_dir: Path) -> dict[str, torch.Tensor]:
    return _weights(sorted((run_dir / "checkpoints").glob("step-*"))[-1] / "model")


VARIED = Path(__file__).resolve().parents[1] / "fixtures" / "varied_reward.py"


@contextmanager
def react_and_varied(react_pool):
    """The shared react service plus a reward function whose scores differ inside every group by
    construction (tests/fixtures/varied_reward.py), summed: no group's advantages are all zero
    whatever the tiny model samples, so a preset that updates must change the weights. The react
    service stays open for the next test; the function's process is this test's own."""
    spec = ServiceSpec("varied", weight=3.0, function=f"{VARIED}:alternating")  # 3 > react's range: sums differ
    varied = service_pool(spec, 1, DEFAULT_DEADLINE_MS)
    try:
        yield CombinedPool([ServiceSpec("react"), spec], lambda s: react_pool if s.name == "react" else varied)
    finally:
        varied.close()


@pytest.mark.parametrize("algo", sorted(PRESETS))
def test_two_steps_of_every_preset_change_parameters(model_dir, pool, tmp_path, algo):
    with react_and_varied(pool) as both:
        result = train(_cfg(model_dir, tmp_path / "run", algo, 2, "optim.lr=1e-2"), pool=both)
    assert [r["step"] for r in result.metrics] == [1, 2]
    for record in result.metrics:
        bad = [k for k, v in record.items() if v is None or not math.isfinite(v)]
        assert not bad, f"non-finite metrics: {bad}"
        assert record["reward/masked"] == 0 and "reward/syntax_ok" in record and "reward/varied/mean" in record
        assert record["groups/zero_variance_frac"] == 0  # the construction held: no group had one reward for all
    before, after = _weights(model_dir), _final_weights(result.run_dir)
    assert any(not torch.equal(before[k], after[k]) for k in before), "no parameter changed"
    for name in ("config.yaml", "metrics.jsonl", "samples.html", "curves.png"):
        assert (result.run_dir / name).is_file()
    assert "<span" in (result.run_dir / "samples.html").read_text()


def test_bot_grpo_without_token_rewards_equals_grpo(model_dir, pool, tmp_path):
    runs = {}
    for algo in ("grpo", "bot_grpo"):
        cfg = _cfg(model_dir, tmp_path / algo, algo, 1, "reward.lambda_tok=0", "optim.lr=1e-2", "rollout.group_size=8")
        runs[algo] = train(cfg, pool=pool)
    a, b = _final_weights(runs["grpo"].run_dir), _final_weights(runs["bot_grpo"].run_dir)
    # The estimators agree to float32 rounding (exactly tested in test_algos_advantages); AdamW turns a
    # rounding difference in a gradient near zero into a step of up to lr, so the weights are compared
    # at what the update rule allows: any real difference in the advantages moves nearly every weight.
    assert_same_steps(a, b, _weights(model_dir), lr=1e-2, betas=(0.9, 0.99), updates=1, share=1e-2,
                      where="bot_grpo against grpo")


NOISE = "reward.span_noise={drop: 0.3, flip: 0.1, jitter: 3}"


WARM_UP = ["optim.warmup_steps=2", "optim.lr_scheduler=cosine"]  # warm-up then decay: a resume that restarts the schedule shows


@pytest.mark.parametrize("updates", [WARM_UP, ["algo.mini_batches=2", "algo.epochs=2", "rollout.temperature=0.7"],
                                     [NOISE]],
                         ids=["one-update-warm-up", "2x2-updates", "span-noise"])
def test_resume_continues_exactly(model_dir, pool, tmp_path, updates, monkeypatch):
    keys = []  # the span noise's seed key of each step of the uninterrupted run
    to_token_rewards = loop.to_token_rewards

    def keep_key(*args, **kwargs):
        keys.append(kwargs["noise_key"])
        return to_token_rewards(*args, **kwargs)

    monkeypatch.setattr(loop, "to_token_rewards", keep_key)
    full_cfg = _cfg(model_dir, tmp_path / "full", "bot_grpo", 4, "run.save_every=2", *updates)
    full = train(full_cfg, pool=pool)
    monkeypatch.undo()
    assert keys == [(full_cfg.run.seed, step, 0) for step in (1, 2, 3, 4)]  # new noise each step, as resumed
    part = _cfg(model_dir, tmp_path / "part", "bot_grpo", 2, "run.save_every=2", *updates)
    train(part, pool=pool)
    part.run.steps = 4
    resumed = train(part, resume=True, pool=pool)

    def strip(records: list[dict]) -> list[dict]:
        return [{k: v for k, v in r.items() if k not in TIMING_KEYS} for r in records]

    assert [r["step"] for r in resumed.metrics] == [1, 2, 3, 4]
    assert strip(resumed.metrics) == strip(full.metrics)
    assert all(r["update/steps"] == (4 if "algo.epochs=2" in updates else 1) for r in full.metrics)
    if "algo.epochs=2" in updates:  # the behaviour log-probs are the sampler's (at its temperature): step 1 on policy
        assert all(r["clip_frac/mb1"] == 0 and r["ratio_max/mb1"] == pytest.approx(1.0, abs=1e-4) for r in full.metrics)
    if updates is WARM_UP:  # equal above, and moving every step: a schedule restarted on resume would show
        lrs = [r["lr"] for r in full.metrics]
        assert all(a != b for a, b in zip(lrs, lrs[1:])) and max(lrs) > 0, lrs
    final_a, final_b = _final_weights(full.run_dir), _final_weights(resumed.run_dir)
    assert all(torch.equal(final_a[k], final_b[k]) for k in final_a)
    assert [p.name for p in sorted((resumed.run_dir / "checkpoints").iterdir())] == ["step-000002", "step-000004"]


def test_span_noise_changes_token_rewards_and_never_scores(model_dir, pool, tmp_path):
    """The same first step (same model, seed, completions) with and without reward.span_noise."""
    sets = {"clean": [], "flipped": ["reward.span_noise={flip: 1.0}"], "noisy": [NOISE]}
    runs = {name: train(_cfg(model_dir, tmp_path / name, "bot_grpo", 1, *extra), pool=pool)
            for name, extra in sets.items()}
    first = {name: run.metrics[0] for name, run in runs.items()}
    clean = first["clean"]
    assert clean["reward/token_mean"] < clean["reward/mean"]  # the react service's spans are penalties
    for name in ("flipped", "noisy"):
        assert first[name]["reward/mean"] == clean["reward/mean"]
        assert first[name]["reward/syntax_ok"] == clean["reward/syntax_ok"]
        assert first[name]["reward/token_mean"] != clean["reward/token_mean"], name
        assert first[name]["adv/std"] != clean["adv/std"], name
    assert first["flipped"]["reward/token_mean"] > first["clean"]["reward/token_mean"]  # penalties became credit
    assert "jitter: 3" in (runs["noisy"].run_dir / "config.yaml").read_text()


@pytest.mark.parametrize("lora", [0, 4], ids=["full-copy", "lora-adapters-off"])
def test_kl_to_the_initial_policy(model_dir, pool, tmp_path, lora):
    """beta > 0: the reference is the initial model, a frozen copy for full fine-tuning and the base weights
    with the adapters disabled under LoRA (no copy). KL starts at 0 and grows once the policy moved."""
    from botgrpo_cli.trainer.session import open_session

    sets = ["algo.beta=0.1", f"model.lora_r={lora}", "optim.lr=3e-2"]
    with open_session(_cfg(model_dir, tmp_path / "probe", "grpo", 1, *sets), pool=pool) as s:
        assert (s.ref is None) == (lora > 0)
        if s.ref is not None:
            assert not any(p.requires_grad for p in s.ref.parameters())
    result = train(_cfg(model_dir, tmp_path / "run", "grpo", 3, *sets), pool=pool)
    kl = [r["kl"] for r in result.metrics]
    assert kl[0] == pytest.approx(0.0, abs=1e-6) and kl[-1] > 1e-5, kl


def test_lora_reference_is_the_base_model_and_adapters_come_back(model_dir):
    from botgrpo_cli.config import ModelConfig
    from botgrpo_cli.trainer.logprobs import batch_logps
    from botgrpo_cli.trainer.policy import load_model, reference_policy

    policy = load_model(str(model_dir), ModelConfig(lora_r=4))
    base = load_model(str(model_dir), ModelConfig(), trainable=False)
    torch.manual_seed(0)
    for name, p in policy.named_parameters():
        if "lora_B" in name:
            p.data.normal_(0, 0.5)  # the adapters now change the outputs
    prompts, ids = [[3, 4, 5], [6, 7]], torch.tensor([[8, 9, 10], [11, 12, 13]])
    mask = torch.ones(2, 3, dtype=torch.bool)

    def logps(model):
        return batch_logps(model, prompts, ids, mask, 1, 1.0, 8)

    adapted = logps(policy)
    with reference_policy(policy, None) as ref:
        torch.testing.assert_close(logps(ref), logps(base))
    assert not torch.allclose(adapted, logps(base), atol=1e-4)
    torch.testing.assert_close(logps(policy), adapted)  # adapters are on again after the block
