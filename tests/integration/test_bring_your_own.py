"""Your own prompts and reward: task `prompts` trained with a Python reward function from a file of
the user's (TRL's signature, and one returning spans), functions that raise or hang, reward
services on other "machines" (`reward.url`, two real math services over HTTP, one killed mid-run),
and eval's rollouts.jsonl scored again by `reward score`. Real tiny model, real services."""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from botgrpo_cli.cli import app
from botgrpo_cli.config import load_config
from botgrpo_cli.errors import UserError
from botgrpo_cli.trainer import loop, train
from botgrpo_cli.trainer.checks import NothingScored

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "extending"
SMALL = ["rollout.prompts_per_step=2", "rollout.group_size=4", "rollout.max_new_tokens=32", "run.threads=1",
         "optim.micro_batch_size=4", "log.tensorboard=false", "run.save_every=0", "run.task=prompts"]
TOKEN = "byo-test-token"
ROWS = 2 * 4  # completions per step


@pytest.fixture(scope="module")
def model(tiny_model) -> Path:
    return tiny_model("arith_synth")


@pytest.fixture(scope="module")
def user_dir(tmp_path_factory) -> Path:
    """What a user has: 20 prompts in a JSONL file, reward functions in a file of their own."""
    from botgrpo_tasks import get_task

    home = tmp_path_factory.mktemp("user")
    examples = get_task("arith_synth").train_examples()[:20]
    rows = [{"prompt": ex.prompt, "answer": ex.reference["answer"], "level": i % 3} for i, ex in enumerate(examples)]
    (home / "prompts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    shutil.copy(EXAMPLES / "reward_function.py", home / "my_rewards.py")
    (home / "faulty.py").write_text(
        "import os, time\n"
        "def boom(completions, **kwargs):\n"
        "    raise ValueError('the reward broke')\n"
        "def hang_once(completions, **kwargs):\n"
        f"    marker = {str(home / 'hung')!r}\n"
        "    if not os.path.exists(marker):\n"
        "        open(marker, 'w').close()\n"
        "        time.sleep(600)\n"
        "    return [0.5] * len(completions)\n")
    return home


def _cfg(model: Path, user_dir: Path, out: Path, *extra: str, steps: int = 2):
    cfg = load_config(None, sets=[*SMALL, f"run.steps={steps}", *extra])
    cfg.model.name_or_path, cfg.run.out_dir = str(model), str(out)
    cfg.run.task_options = {"path": str(user_dir / "prompts.jsonl")}
    return cfg


@pytest.fixture
def advantages(monkeypatch):
    """(token rewards, mask, advantages) of each step, as the trainer computed them."""
    seen: list[tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = []
    real = loop.compute_advantages

    def keep(name, **kwargs):
        adv = real(name, **kwargs)
        seen.append((kwargs["token_rewards"].detach().clone(), kwargs["mask"].clone(), adv.detach().clone()))
        return adv

    monkeypatch.setattr(loop, "compute_advantages", keep)
    return seen


def test_trl_function_and_span_function_train_and_spans_reach_the_advantages(model, user_dir, tmp_path, advantages):
    plain = train(_cfg(model, user_dir, tmp_path / "plain", f"reward.function={user_dir}/my_rewards.py:contains_answer"))
    assert [m["step"] for m in plain.metrics] == [1, 2]
    for m in plain.metrics:  # a function with no success rule: success is n/a, not score > 0
        assert m["reward/masked"] == 0 and "success" not in m and "reward/contains_answer/mean" in m
    spans = train(_cfg(model, user_dir, tmp_path / "spans", f"reward.function={user_dir}/my_rewards.py:answer_with_spans"))
    assert [m["step"] for m in spans.metrics] == [1, 2] and all(m["reward/masked"] == 0 for m in spans.metrics)
    assert "reward/numbers" in spans.metrics[0]  # the function's own metric is logged
    (r_plain, mask, adv_plain), (r_span, mask_s, adv_span) = advantages[0], advantages[2]  # step 1 of each run
    assert torch.equal(mask, mask_s)  # same seed, same model: the same completions
    in_spans = (r_span != r_plain) & mask  # tokens the spans cover
    assert in_spans.any(), "the spans did not reach the token rewards"
    assert not torch.allclose(adv_span[in_spans], adv_plain[in_spans]), "spans did not change bot_grpo's advantages"


def _warnings(text: str, needle: str) -> list[str]:
    return [line for line in text.splitlines() if needle in line]


def test_a_function_that_raises_on_every_batch_fails_the_run_in_one_line(model, user_dir, tmp_path, capsys):
    with pytest.raises(NothingScored) as failed:
        train(_cfg(model, user_dir, tmp_path / "run", f"reward.function={user_dir}/faulty.py:boom"))
    message = str(failed.value)
    assert "\n" not in message and "all 2 step(s) was masked" in message
    assert "faulty.py:boom raised ValueError: the reward broke (faulty.py line 3)" in message
    assert [json.loads(line)["reward/masked"] for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()] \
        == [ROWS, ROWS]
    err = capsys.readouterr().err
    assert len(_warnings(err, "the reward broke")) == 1, err  # the warning once, then the run's one line
    assert "Traceback" not in err


def test_a_hanging_function_is_cut_at_the_deadline_and_the_next_batches_are_scored(model, user_dir, tmp_path, capsys):
    result = train(_cfg(model, user_dir, tmp_path / "run", f"reward.function={user_dir}/faulty.py:hang_once",
                        "reward.deadline_ms=3000"))
    first, second = result.metrics
    assert first["reward/masked"] >= 1 and second["reward/masked"] == 0
    assert second["reward/mean"] == pytest.approx(0.5)
    err = capsys.readouterr().err
    assert len(_warnings(err, "reward timeout")) == 1, err


class MathOverHttp:
    """`python -m botgrpo_rewards math --http HOST:0 --token ...`, its URL read from its log."""

    def __init__(self, host: str = "127.0.0.1", token: str = TOKEN):
        self.proc = subprocess.Popen([sys.executable, "-m", "botgrpo_rewards", "math", "--http", f"{host}:0",
                                      "--token", token], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        found, self.url = threading.Event(), ""

        def pump() -> None:
            for line in self.proc.stderr:
                m = re.search(r"serving math on http://\S+:(\d+)", line)
                if m:
                    self.url = f"http://127.0.0.1:{m.group(1)}"
                    found.set()
        threading.Thread(target=pump, daemon=True).start()
        assert found.wait(120), "the math service never said where it serves"

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(20)


@pytest.fixture
def two_services():
    services = [MathOverHttp(), MathOverHttp()]
    yield services
    for s in services:
        s.kill()


def test_reward_url_spreads_over_two_services_and_resends_when_one_dies(model, user_dir, tmp_path, two_services,
                                                                        monkeypatch):
    monkeypatch.setenv("BOTGRPO_REWARD_TOKEN", TOKEN)
    a, b = two_services
    cfg = _cfg(model, user_dir, tmp_path / "run", f"reward.url=[{a.url}, {b.url}]")
    result = train(cfg, on_step=lambda step, metrics: a.kill() if step == 1 else None)
    first, second = result.metrics
    assert first["reward/masked"] == 0 and second["reward/masked"] == 0  # nothing lost
    assert "reward/correct" in second  # math's metrics, from the surviving service
    assert "success" in second  # math reports no `success`: for task prompts it is then score > 0
    assert second["reward/endpoint_failures"] >= 1 and second["reward/resent"] >= 1
    assert first["reward/resent"] == 0


def test_a_wrong_token_is_one_error_line(model, user_dir, tmp_path, monkeypatch):
    service = MathOverHttp(host="0.0.0.0")  # beyond loopback: the token is required
    try:
        monkeypatch.setenv("BOTGRPO_REWARD_TOKEN", "not-the-token")
        with pytest.raises(UserError) as err:
            train(_cfg(model, user_dir, tmp_path / "run", f"reward.url={service.url}"))
    finally:
        service.kill()
    message = str(err.value)
    assert "\n" not in message and "HTTP 401" in message and "BOTGRPO_REWARD_TOKEN" in message
    assert not (tmp_path / "run" / "metrics.jsonl").exists()


def _invoke(*args: str) -> None:
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, f"{result.output}\n{result.exception!r}"


def _eval_scores(out: Path) -> dict[str, float | None]:
    report = json.loads((out / "eval.json").read_text())
    return {f"p{p:05d}-s{i:03d}": s["score"] for p, problem in enumerate(report["evaluations"][-1]["problems"])
            for i, s in enumerate(problem["samples"])}


def _scored(path: Path) -> dict[str, float | None]:
    return {row["id"]: row["score"] for row in map(json.loads, path.read_text().splitlines())}


def test_eval_rollouts_scored_again_give_evals_scores(model, user_dir, tmp_path):
    fn = f"{user_dir}/my_rewards.py:answer_with_spans"
    out = tmp_path / "eval"
    _invoke("eval", "--task", "prompts", "--task-option", f"path={user_dir / 'prompts.jsonl'}", "--function", fn,
            "--model", str(model), "--out", str(out), "--n", "2", "--max-new-tokens", "24", "--threads", "1")
    lines = [json.loads(line) for line in (out / "rollouts.jsonl").read_text().splitlines()]
    assert len(lines) == 2 * 4  # 20 prompts, 20% held out, 2 samples each
    assert all({"id", "prompt", "completion", "reference", "options"} <= set(line) for line in lines)
    assert all(line["reference"]["answer"] and "level" in line["reference"] for line in lines)
    _invoke("reward", "score", str(out / "rollouts.jsonl"), "--function", fn, "-o", str(tmp_path / "scored.jsonl"))
    expected = _eval_scores(out)
    assert _scored(tmp_path / "scored.jsonl") == expected and all(v is not None for v in expected.values())


def test_gdpo_truncation_mask_and_trl_losses_reach_the_update(model, user_dir, tmp_path, advantages, monkeypatch):
    """Two TRL reward functions with algo.reward_aggregation=normalize_then_sum, mask_truncated, sapo, the
    top-entropy and off-policy masks and the bias-corrected KL, one step: the estimator sees GDPO's scores
    (each function centred in its group, so each group's scores sum to 0), the update the trained tokens
    less the rows cut at the token limit."""
    updates = []
    real = loop.update
    monkeypatch.setattr(loop, "update", lambda *a, **kw: updates.append(a[3]) or real(*a, **kw))
    rewards = f"{user_dir}/my_rewards.py"
    cfg = _cfg(model, user_dir, tmp_path / "gdpo", f"reward.function=[{rewards}:contains_answer, {rewards}:brevity]",
               "algo.reward_aggregation=normalize_then_sum", "algo.mask_truncated=true", "algo.loss=sapo",
               "algo.loss_options={}", "algo.top_entropy_quantile=0.5", "algo.off_policy_mask=0.5", "algo.beta=0.01",
               "algo.kl_bias_correction=true", "rollout.max_new_tokens=32", steps=1)
    metrics = train(cfg).metrics[0]
    assert 0 < metrics["kept/high_entropy"] < 1 and metrics["kept/off_policy"] == 1  # on-policy: nothing is off
    assert "reward/contains_answer/mean" in metrics and "reward/brevity/mean" in metrics  # raw scores logged
    (r, adv_mask, _), = advantages
    inp, = updates
    scores = r[:, 0]  # lambda_seq = 1, no spans: every token's reward is its completion's score
    torch.testing.assert_close(scores.view(-1, 4).sum(1), torch.zeros(2), atol=1e-3, rtol=0)
    assert scores.abs().max() > 0.1
    lengths = adv_mask.sum(1)
    assert bool((lengths == 32).any()), "no completion reached the token limit: the test needs some"
    kept_rows = inp.mask.any(1)
    assert bool((kept_rows[lengths < 32]).all()) and not bool(kept_rows.all())  # ended rows kept, cut ones dropped
    assert torch.equal(inp.mask[kept_rows], adv_mask[kept_rows])
