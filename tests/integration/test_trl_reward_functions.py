"""A TRL user's reward functions, unchanged, train the real SmolLM2-135M-Instruct (GGUF, LoRA):
TRL's documented quickstart rewards copied into a file as a user copies them, a function using
completion_ids, trainer_state and log_metric, one returning None for half the rows, TRL's own
think_format_reward on conversational data, and a run whose every completion is masked, which
fails in one line. Each run: 2 prompts x 2 completions, a few new tokens; 2 steps where the trainer
state's progress is checked, else 1."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from botgrpo_cli.config import load_config
from botgrpo_cli.trainer import train

pytestmark = [pytest.mark.real_model, pytest.mark.timeout(1500)]

# From TRL's quickstart and GRPOTrainer docs, as a user copies them
QUICKSTART = '''
def reward_num_unique_chars(completions, **kwargs):
    """Reward function that rewards completions with more unique letters."""
    return [float(len(set(completion))) for completion in completions]


def reward_len(completions, **kwargs):
    return [-abs(20 - len(completion)) for completion in completions]
'''

# What a TRL user writes with the trainer's other keywords, and a reward that scores half the rows
MORE = '''
def tokens(completions, completion_ids, trainer_state, log_metric, **kwargs):
    if trainer_state.max_steps != 2 or trainer_state.global_step not in (0, 1) or not trainer_state.epoch > 0:
        raise ValueError(f"unexpected trainer_state {trainer_state}")
    log_metric("chars_per_token", sum(map(len, completions)) / max(1, sum(map(len, completion_ids))))
    return [float(len(ids)) for ids in completion_ids]


def every_other(completions, **kwargs):
    return [1.0 if i % 2 == 0 else None for i in range(len(completions))]


def never(completions, **kwargs):
    return [None] * len(completions)
'''

CHAT = '''
def prompt_is_chat(prompts, completions, **kwargs):
    """1 for each completion given as TRL gives conversational ones, after a prompt of messages."""
    return [float(isinstance(p, list) and p[-1]["role"] == "user" and c[0]["role"] == "assistant"
                  and isinstance(c[0]["content"], str)) for p, c in zip(prompts, completions)]
'''

SMALL = ["rollout.prompts_per_step=2", "rollout.group_size=2", "rollout.max_new_tokens=12", "run.threads=2",
         "model.lora_r=8", "run.steps=2", "log.tensorboard=false", "run.save_every=0", "run.task=prompts",
         "log.samples_every=1"]
ROWS = 4  # completions per step


@pytest.fixture(scope="module")
def user(tmp_path_factory, smollm2_gguf) -> Path:
    """A user's folder: plain and conversational prompts, reward files of their own."""
    home = tmp_path_factory.mktemp("trl_user")
    questions = ["What is 2 + 3?", "Name a colour.", "Say hello.", "What is 10 - 4?", "Name a fruit.", "Count to 3."]
    (home / "plain.jsonl").write_text("".join(json.dumps({"prompt": q, "topic": "short"}) + "\n" for q in questions))
    (home / "chat.jsonl").write_text("".join(
        json.dumps({"prompt": [{"role": "system", "content": "Think in <think></think> first."},
                               {"role": "user", "content": q}]}) + "\n" for q in questions))
    (home / "quickstart.py").write_text(QUICKSTART)
    (home / "more.py").write_text(MORE)
    (home / "chat_rewards.py").write_text(CHAT)
    return home


def _train(user: Path, gguf: Path, out: Path, data: str, functions: list[str], steps: int = 2):
    cfg = load_config(None, algo="grpo", sets=[*SMALL, f"model.name_or_path={gguf}", f"run.steps={steps}"])
    cfg.run.out_dir, cfg.run.task_options = str(out), {"path": str(user / data)}
    cfg.reward.function = functions
    return train(cfg)


@pytest.fixture(scope="module")
def plain_run(user, smollm2_gguf, tmp_path_factory):
    out = tmp_path_factory.mktemp("plain") / "run"
    result = _train(user, smollm2_gguf, out, "plain.jsonl", [
        f"{user}/quickstart.py:reward_num_unique_chars", f"{user}/quickstart.py:reward_len",
        f"{user}/more.py:tokens", f"{user}/more.py:every_other"])
    return result, out


def test_quickstart_rewards_and_trl_keywords_train_with_nothing_masked(plain_run):
    result, _ = plain_run
    assert [m["step"] for m in result.metrics] == [1, 2]
    for m in result.metrics:
        assert m["reward/masked"] == 0
        unique, length = m["reward/reward_num_unique_chars/mean"], m["reward/reward_len/mean"]
        assert unique > 1 and length <= 0  # scores far outside [-1, 1] kept as they are
        assert m["reward/tokens/mean"] == pytest.approx(m["completion/length_mean"])  # len(completion_ids)
        assert m["reward/chars_per_token"] > 0  # log_metric's value, logged by its name
        for name in ("reward_num_unique_chars", "reward_len", "tokens", "every_other"):
            assert f"reward/{name}/std" in m
        assert "success" not in m  # no success rule for these rewards: n/a


def test_a_function_returning_none_for_half_the_rows_leaves_the_others_counting(plain_run):
    result, _ = plain_run
    for m in result.metrics:
        assert m["reward/masked"] == 0 and m["reward/every_other/mean"] == 1.0
        # every row counts the three others; every other row adds every_other's 1.0
        others = m["reward/reward_num_unique_chars/mean"] + m["reward/reward_len/mean"] + m["reward/tokens/mean"]
        assert m["reward/mean"] == pytest.approx(others + 0.5, rel=1e-5)


def test_each_function_is_shown_in_the_samples_page_and_the_curves(plain_run):
    _, out = plain_run
    page = (out / "samples.html").read_text()
    assert "by function: reward_num_unique_chars" in page and "every_other none" in page
    assert "chars_per_token" in page
    assert (out / "curves.png").stat().st_size > 0


def test_trl_think_format_reward_on_conversational_data(user, smollm2_gguf, tmp_path):
    result = _train(user, smollm2_gguf, tmp_path / "run", "chat.jsonl",
                    ["trl.rewards:think_format_reward", f"{user}/chat_rewards.py:prompt_is_chat"], steps=1)
    assert len(result.metrics) == 1
    for m in result.metrics:
        assert m["reward/masked"] == 0 and m["reward/prompt_is_chat/mean"] == 1.0
        assert 0.0 <= m["reward/think_format_reward/mean"] <= 1.0


def test_a_run_with_every_completion_masked_exits_non_zero_in_one_line(user, smollm2_gguf, tmp_path):
    sets = [*SMALL, f"model.name_or_path={smollm2_gguf}", f"run.task_options={{path: {user / 'plain.jsonl'}}}",
            f"reward.function={user}/more.py:never", "run.steps=1"]
    done = subprocess.run([sys.executable, "-m", "botgrpo_cli", "train", "--out", str(tmp_path / "run"),
                           *[a for s in sets for a in ("--set", s)]], capture_output=True, text=True, timeout=1200,
                          env={**os.environ, "COLUMNS": "80"})
    assert done.returncode == 1, done.stderr
    output = done.stdout + done.stderr
    lines = [line for line in output.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "every completion of all 1 step(s) was masked" in lines[0], output
    assert "every reward function (never) returned None" in lines[0] and "botgrpo reward score" in lines[0]
    assert "Traceback" not in output
