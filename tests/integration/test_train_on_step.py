"""train()'s step callback: the public hook benchmarks time steps with (no monkeypatching), called
once per step, in order, with the metrics that step logged; the held-out evaluation runs through
the evaluation path on the arith task's math service."""

from __future__ import annotations

from botgrpo_cli.config import load_config
from botgrpo_cli.trainer import train


def test_on_step_sees_every_step_with_its_metrics(tiny_arith_model_dir, tmp_path):
    cfg = load_config(None, algo="grpo", sets=[
        "run.task=arith_synth", "run.steps=3", "rollout.prompts_per_step=2", "rollout.group_size=2",
        "rollout.max_new_tokens=24", "run.threads=1", "log.tensorboard=false", "run.save_every=0",
        "run.eval_every=3", "run.eval_prompts=4", "log.samples_every=0"])
    cfg.model.name_or_path, cfg.run.out_dir = str(tiny_arith_model_dir), str(tmp_path / "run")
    seen: list[tuple[int, dict]] = []
    result = train(cfg, on_step=lambda step, metrics: seen.append((step, dict(metrics))))
    assert [step for step, _ in seen] == [1, 2, 3]
    for (step, metrics), logged in zip(seen, result.metrics):
        assert logged["step"] == step and logged["time/step_s"] == metrics["time/step_s"]
    # the callback runs before the periodic evaluation; the logged line has both
    assert "eval/success" not in seen[-1][1] and 0.0 <= result.metrics[-1]["eval/success"] <= 1.0
    assert result.metrics[-1]["eval/prompts"] == 4
