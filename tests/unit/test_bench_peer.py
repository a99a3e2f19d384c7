"""`bench step --vs trl --shape`: the shape option."""

from __future__ import annotations

import json

import pytest


def test_peer_bench_shape_parses_and_refuses_nonsense():
    from botgrpo_cli.bench.peer_trl import Shape
    from botgrpo_cli.errors import UserError

    assert Shape.parse("2x4x128") == Shape(2, 4, 128) and str(Shape()) == "8x8x48"
    for bad in ("8x8", "8x1x48", "ax8x48", "0x8x48"):
        with pytest.raises(UserError):
            Shape.parse(bad)


def test_bench_step_reverses_the_order_every_other_round(monkeypatch):
    from botgrpo_cli.bench import step

    order = []

    def fake_one(algo, steps, task, threads, model, out, mini_batches=0, sets=()):
        order.append(algo)
        return step.StepFigures(algo=algo, steps=steps, step_s=1.0, generate_s=0.5, reward_s=0.1, logp_s=0.1,
                                update_s=0.3, peak_rss_mb=1.0, updates=1, clip_frac=0.0)

    monkeypatch.setattr(step, "_one", fake_one)
    step.run(["grpo", "bot_grpo"], steps=1, task="arith_synth", threads=1, repeats=4)
    assert order == ["grpo", "bot_grpo", "bot_grpo", "grpo"] * 2


def test_bench_step_sets_reach_every_presets_config(monkeypatch, tmp_path):
    import types

    import botgrpo_cli.trainer as trainer
    from botgrpo_cli.bench import step

    seen = []
    record = {"time/step_s": 1.0, "time/generate_s": 0.5, "time/reward_s": 0.1, "time/logp_s": 0.0,
              "time/update_s": 0.4, "update/steps": 1.0, "clip_frac": 0.0,
              "completion/length_mean": 10.0}

    def fake_train(cfg):
        seen.append(cfg)
        return types.SimpleNamespace(metrics=[record, record])

    monkeypatch.setattr(trainer, "train", fake_train)
    fig = step.measure("bot_grpo", 1, "arith_synth", 1, tmp_path, sets=["optim.lr=1e-30", "rollout.temperature=0.7"])
    assert seen[0].optim.lr == 1e-30 and seen[0].rollout.temperature == 0.7 and fig.step_s == 1.0
    argv = []
    monkeypatch.setattr(step.subprocess, "run", lambda a, **_: argv.extend(a) or types.SimpleNamespace(
        returncode=0, stdout=json.dumps(fig.__dict__), stderr=""))
    step._one("grpo", 1, "arith_synth", 1, None, tmp_path, 0, ["optim.lr=0"])
    assert argv[-1] == "optim.lr=0"  # the worker's sys.argv[8:]


@pytest.mark.parametrize("task, chosen", [("react_synth", None), ("react_synth", "ts5"), ("arith_synth", "ts5")])
def test_the_title_names_the_react_checker_both_sides_inherit(monkeypatch, task, chosen):
    """BOTGRPO_REACT_CHECKER reaches both sides' processes (and so their services) and the table's
    title names it; unset, the title says both services pick by their own rule; other tasks: nothing."""
    import subprocess

    from rich.console import Console

    from botgrpo_cli.bench import peer_trl

    if chosen:
        monkeypatch.setenv("BOTGRPO_REACT_CHECKER", chosen)
    else:
        monkeypatch.delenv("BOTGRPO_REACT_CHECKER", raising=False)
    seen = []

    def fake_run(argv, capture_output, text):
        seen.append(__import__("os").environ.get("BOTGRPO_REACT_CHECKER"))  # what the child would inherit
        side = peer_trl.SideFigures(argv[3], 1.0, 0.5, 0.2, 0.3, 1.0, 1)
        return subprocess.CompletedProcess(argv, 0, stdout=json.dumps(peer_trl.asdict(side)) + "\n", stderr="")

    monkeypatch.setattr(peer_trl.subprocess, "run", fake_run)
    console = Console(record=True, width=400)
    peer_trl.run(console, steps=1, task=task, threads=1, rounds=2)
    title = " ".join(console.export_text().split())  # rich wraps a title wider than its table
    assert seen == [chosen] * 4
    if task == "arith_synth":
        assert "react checker" not in title
    elif chosen:
        assert f"react checker {chosen} on both" in title
    else:
        assert "react checker by the service's own rule on both" in title
