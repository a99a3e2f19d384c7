"""Several reward services at once (`reward.services`): real react + render processes, and a service
that fails, in the reward pool and in training."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from botgrpo_cli.config import load_config
from botgrpo_cli.reward_client import RewardPool
from botgrpo_cli.reward_client.combined import CombinedPool, ServiceSpec
from botgrpo_cli.trainer import train
from botgrpo_cli.trainer.checks import NothingScored
from botgrpo_rewards.protocol import ScoreRequest

ECHO = [sys.executable, str(Path(__file__).resolve().parents[1] / "fixtures" / "echo_service.py")]
GOOD = "export default function App() { return <h1>Hello</h1>; }"
TYPE_ERROR = "export default function App() { const n: number = 'x'; return <p>{n}</p>; }"


def _request(rid: str, code: str) -> ScoreRequest:
    return ScoreRequest(id=rid, completion=code, prompt="a heading", reference={"reference_code": GOOD})


def test_react_and_render_combine_to_the_weighted_sum_of_their_own_answers():
    requests = [_request("good", GOOD), _request("types", TYPE_ERROR)]
    alone = {}
    for name in ("react", "render"):
        with RewardPool(name) as pool:
            alone[name] = pool.score(requests)
    with CombinedPool([ServiceSpec("react", 1.0), ServiceSpec("render", 0.5)], lambda s: RewardPool(s.name)) as pool:
        both = pool.score(requests)
    for k, resp in enumerate(both):
        react, render = alone["react"][k], alone["render"][k]
        assert resp.ok and resp.score == pytest.approx(react.score + 0.5 * render.score)
        assert resp.metrics["react/score"] == react.score and resp.metrics["render/score"] == render.score
        assert {f"render/{m}" for m in render.metrics} <= set(resp.metrics) and set(react.metrics) <= set(resp.metrics)
        assert len(resp.spans) == len(react.spans) + len(render.spans)
    assert both[1].score < both[0].score  # the type error costs react's share


def test_services_score_concurrently():
    """Two services that each take 3 s answer together in well under the 6 s one after the other would take."""
    specs = [ServiceSpec("slow_a", 1.0, {"sleep_ms": 3000}, command=ECHO),
             ServiceSpec("slow_b", 1.0, {"sleep_ms": 3000}, command=ECHO)]
    with CombinedPool(specs, lambda s: RewardPool(s.name, command=s.command)) as pool:
        t0 = time.monotonic()
        resp = pool.submit(_request("x", "abc")).result()
        elapsed = time.monotonic() - t0
    assert resp.ok and resp.score == pytest.approx(1.0) and elapsed < 5.0, elapsed


def _train(model_dir: Path, out: Path, services: str, steps: int = 2):
    cfg = load_config(None, algo="grpo", sets=[
        "run.task=react_synth", f"run.steps={steps}", "rollout.prompts_per_step=2", "rollout.group_size=4",
        "rollout.max_new_tokens=48", "run.threads=1", "optim.micro_batch_size=4", "log.tensorboard=false",
        "run.save_every=0", f"model.name_or_path={model_dir}", f"reward.services={services}"])
    cfg.run.out_dir = str(out)
    return train(cfg)


def test_training_on_react_plus_render_logs_each_service(tiny_model_dir, tmp_path):
    result = _train(tiny_model_dir, tmp_path / "run", "{react: 1.0, render: 0.5}")
    for r in result.metrics:
        # a render that runs out of time on a loaded machine is a counted failure of that row, never a score
        failed = r["reward/react/failed"], r["reward/render/failed"]
        assert max(failed) <= r["reward/masked"] <= sum(failed)
        if r["reward/masked"] < 8:  # means over the scored rows: the sum's mean is the weighted sum of means
            assert r["reward/mean"] == pytest.approx(r["reward/react/mean"] + 0.5 * r["reward/render/mean"], abs=1e-5)
            assert "reward/syntax_ok" in r and "reward/render/similarity" in r  # the main service keeps its names
            assert "success" in r


def test_a_service_that_fails_masks_and_counts_every_row_it_failed(tiny_model_dir, tmp_path):
    services = "{react: 1.0, echo: {weight: 0.5, options: {backend_error: broken}, command: %s}}" % ECHO
    with pytest.raises(NothingScored, match="reward service 'echo': broken"):  # nothing scored: the run fails
        _train(tiny_model_dir, tmp_path / "run", services, steps=1)
    (r,) = map(json.loads, (tmp_path / "run" / "metrics.jsonl").read_text().splitlines())
    assert r["reward/masked"] == 8 and r["reward/echo/failed"] == 8 and r["reward/react/failed"] == 0


def test_reward_score_runs_several_services_on_one_file(tmp_path):
    import json

    from typer.testing import CliRunner

    from botgrpo_cli.cli import app

    rollouts = tmp_path / "react.jsonl"
    rollouts.write_text("".join(json.dumps({"id": rid, "prompt": "a heading", "completion": code,
                                            "reference": {"reference_code": GOOD}}) + "\n"
                                for rid, code in (("good", GOOD), ("types", TYPE_ERROR))))
    out = tmp_path / "scored.jsonl"
    result = CliRunner().invoke(app, ["reward", "score", str(rollouts), "-s", "react", "-s", "render=0.5", "-o", str(out)])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in rows] == ["good", "types"]
    for r in rows:
        assert r["status"] == "ok" and r["info"]["services"] == {"react": "ok", "render": "ok"}
        assert r["score"] == pytest.approx(r["metrics"]["react/score"] + 0.5 * r["metrics"]["render/score"])
    assert rows[1]["score"] < rows[0]["score"]
    bad = CliRunner().invoke(app, ["reward", "score", str(rollouts), "-s", "react", "-s", "render=half"])
    assert bad.exit_code != 0 and "weight" in str(bad.exception)
