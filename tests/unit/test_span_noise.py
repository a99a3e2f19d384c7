"""reward.span_noise: the pure noise on spans (reward_client/span_noise.py), its config check, and
its one place on the way to token rewards (to_token_rewards)."""

from __future__ import annotations

import random

import pytest
import torch

from botgrpo_cli.config import load_config
from botgrpo_cli.errors import UserError
from botgrpo_cli.reward_client.scored import Scored, to_token_rewards
from botgrpo_cli.reward_client.span_noise import SpanNoise, noise_seed, noisy_spans, parse_span_noise
from botgrpo_rewards.protocol import ScoreResponse, Span

TEXT_LEN = 40


def _spans(seed: int, n: int = 12) -> list[tuple[int, int, float]]:
    """Spans like the services send: inside the text, some touching its ends, rewards in [-1, 1]."""
    rng = random.Random(seed)
    out = [(0, 3, -0.5), (TEXT_LEN - 2, TEXT_LEN, -1.0), (5, 5, -0.25)]
    while len(out) < n:
        a = rng.randrange(TEXT_LEN)
        out.append((a, rng.randrange(a, TEXT_LEN + 1), rng.choice([-1.0, -0.5, -0.25, 0.25, 1.0])))
    return out


SPANS = _spans(0)


def test_zero_noise_is_the_identity_even_with_a_seed():
    for seed in range(20):
        assert noisy_spans(SPANS, TEXT_LEN, SpanNoise(), seed) == SPANS
    assert parse_span_noise({}).off and parse_span_noise({"drop": 0, "flip": 0.0, "jitter": 0}).off


def test_drop_one_removes_every_span_and_flip_one_negates_every_span():
    for seed in range(20):
        assert noisy_spans(SPANS, TEXT_LEN, SpanNoise(drop=1.0), seed) == []
        assert noisy_spans(SPANS, TEXT_LEN, SpanNoise(flip=1.0), seed) == [(s, e, -r) for s, e, r in SPANS]


def test_a_share_drop_or_flip_keeps_positions_and_magnitudes():
    out = noisy_spans(SPANS * 50, TEXT_LEN, SpanNoise(drop=0.3, flip=0.1), seed=1)
    assert 0.55 < len(out) / len(SPANS * 50) < 0.85  # about 70% kept (600 spans)
    kept = set((s, e, abs(r)) for s, e, r in SPANS)
    assert all((s, e, abs(r)) in kept for s, e, r in out)
    signs = {(s, e, abs(r)): r for s, e, r in SPANS}  # SPANS has one reward per (start, end, magnitude)
    assert any(r == -signs[(s, e, abs(r))] for s, e, r in out)  # some flipped


def test_jitter_keeps_spans_inside_the_text_with_non_negative_length_and_bounded_moves():
    n = 3
    moved = 0
    for seed in range(200):
        out = noisy_spans(SPANS, TEXT_LEN, SpanNoise(jitter=n), seed)
        assert len(out) == len(SPANS)
        for (s, e, r), (s0, e0, r0) in zip(out, SPANS):
            assert 0 <= s <= e <= TEXT_LEN
            assert abs(s - s0) <= n and (e == s or abs(e - e0) <= n)
            assert r == r0 and -1.0 <= r <= 1.0
            moved += (s, e) != (s0, e0)
    assert moved > 0.5 * 200 * len(SPANS)


def test_noise_is_deterministic_by_seed_and_differs_between_rows():
    noise = SpanNoise(drop=0.3, flip=0.1, jitter=3)
    assert noisy_spans(SPANS, TEXT_LEN, noise, noise_seed(0, 5, 0, 2)) == \
        noisy_spans(list(SPANS), TEXT_LEN, noise, noise_seed(0, 5, 0, 2))
    rows = [tuple(noisy_spans(SPANS, TEXT_LEN, noise, noise_seed(0, 5, 0, row))) for row in range(8)]
    assert len(set(rows)) == 8
    assert noise_seed(0, 5, 0, 1) not in {noise_seed(1, 5, 0, 1), noise_seed(0, 6, 0, 1), noise_seed(0, 5, 1, 1)}
    assert noise_seed(0, 5, 0, 1) == (5 * 1_000_003**2 + 1)  # rollout/seeds.py mixing: the same in every process


def test_raising_one_probability_changes_only_what_it_governs():
    # every span takes the same draws whatever the settings, so drop=0.3 removes the same spans with or without flip
    a = noisy_spans(SPANS, TEXT_LEN, SpanNoise(drop=0.3), 4)
    b = noisy_spans(SPANS, TEXT_LEN, SpanNoise(drop=0.3, flip=0.5), 4)
    assert [(s, e, abs(r)) for s, e, r in a] == [(s, e, abs(r)) for s, e, r in b]


@pytest.mark.parametrize("value,needle", [
    ("{drop: 1.5}", "drop must be a probability in [0, 1], got 1.5"),
    ("{flip: -0.1}", "flip must be a probability in [0, 1], got -0.1"),
    ("{flip: true}", "flip must be a probability"),
    ("{jitter: -1}", "jitter must be a whole number of characters >= 0, got -1"),
    ("{jitter: 2.5}", "jitter must be a whole number"),
    ("{drp: 0.1}", "unknown key(s) drp; did you mean drop? allowed: drop, flip, jitter"),
    ("0.3", "reward.span_noise must be a mapping"),
])
def test_bad_settings_are_one_clear_line(value, needle):
    with pytest.raises(UserError) as err:
        load_config(None, sets=[f"reward.span_noise={value}"])
    assert needle in str(err.value) and "\n" not in str(err.value)


def test_the_setting_reaches_config_yaml():
    cfg = load_config(None, sets=["reward.span_noise={drop: 0.3, flip: 0.1, jitter: 3}"])
    assert "span_noise:\n    drop: 0.3\n    flip: 0.1\n    jitter: 3" in cfg.to_yaml()
    assert parse_span_noise(cfg.reward.span_noise) == SpanNoise(0.3, 0.1, 3)
    assert load_config().reward.span_noise == {}


def test_to_token_rewards_applies_it_to_spans_only_and_clamps_to_each_text():
    ok = ScoreResponse(id="a", status="ok", score=0.5, spans=[Span(0, 2, -1.0), Span(2, 4, -0.5)])
    failed = ScoreResponse(id="b", status="timeout")
    scored = Scored([ok, ok, failed], ["abcd", "abcd", "xy"])
    offsets = [[(0, 1), (1, 2), (2, 3), (3, 4)]] * 2 + [[(0, 1), (1, 2)]]
    clean = to_token_rewards(scored, offsets)
    flipped = to_token_rewards(scored, offsets, span_noise=SpanNoise(flip=1.0), noise_key=(0, 1, 0))
    assert torch.equal(flipped.scores, clean.scores) and torch.equal(flipped.mask, clean.mask)
    assert torch.equal(flipped.rho, -clean.rho) and clean.rho[0].tolist() == [-1.0, -1.0, -0.5, -0.5]
    dropped = to_token_rewards(scored, offsets, span_noise=SpanNoise(drop=1.0), noise_key=(0, 1, 0))
    assert torch.equal(dropped.r, clean.scores[:, None] * clean.mask)  # outcome only: spans gone, scores kept
    jittered = to_token_rewards(scored, offsets, span_noise=SpanNoise(jitter=10), noise_key=(0, 1, 0))
    assert torch.equal(jittered.scores, clean.scores)
    assert not torch.equal(jittered.rho[0], jittered.rho[1])  # rows 0 and 1: the same spans, their own noise
    assert jittered.rho.abs().max() <= 1.0 and jittered.rho[2].abs().sum() == 0  # the failed row stays masked


def test_bench_convergence_keeps_noisy_and_clean_runs_apart(tmp_path):
    from botgrpo_cli.bench.convergence import Settings, check_work_dir

    def settings(*sets: str) -> Settings:
        return Settings(task="react_synth", algos=["bot_grpo"], seeds=[0], steps=2, eval_every=1, targets=[0.5],
                        metric="all_ok", eval_prompts=4, eval_samples=1, sets=list(sets), work=str(tmp_path / "w"))

    check_work_dir(settings("run.task_options={sites: 2}"))
    with pytest.raises(UserError, match="other settings"):
        check_work_dir(settings("run.task_options={sites: 2}", "reward.span_noise={drop: 0.3}"))
