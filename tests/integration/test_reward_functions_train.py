"""Reward functions in the trainer and in `botgrpo eval` on the tiny bootstrapped model: a Python
callable as reward.function, whole generation batches, `--check` naming the failing function, and
eval.md showing each function's score, a function's log_metric figures, and success as n/a."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from botgrpo_cli.cli import app
from botgrpo_cli.config import load_config
from botgrpo_cli.trainer import loop, train
from botgrpo_cli.trainer.checks import CheckFailed

SMALL = ["rollout.prompts_per_step=2", "rollout.group_size=4", "rollout.max_new_tokens=16", "run.threads=1",
         "optim.micro_batch_size=4", "log.tensorboard=false", "run.save_every=0", "run.task=prompts", "run.steps=2"]

REWARDS = '''
def reward_len(completions, completion_ids, log_metric, **kwargs):
    log_metric("longest", float(max(map(len, completions))))
    log_metric("ids_per_completion", sum(map(len, completion_ids)) / len(completion_ids))
    return [-abs(20 - len(c)) for c in completions]


def nothing(completions, **kwargs):
    return [None] * len(completions)


_order, _count = {}, {}


def second_prompt_constant(prompts, completions, **kwargs):
    """The k-th prompt scored (k = 0, 1, ...) scores k + 1 and k - 1 on alternate rows; the second one
    scores 7 on every row (a group with nothing to learn). Run in one process."""
    scores = []
    for prompt in prompts:
        k = _order.setdefault(prompt, len(_order))
        _count[prompt] = _count.get(prompt, 0) + 1
        scores.append(7.0 if k == 1 else k + (1.0 if _count[prompt] % 2 else -1.0))
    return scores


_scored_once = set()


def first_fails(prompts, completions, **kwargs):
    """None (a failed row) for each prompt's first completion, 1.0 for the others. Run in one process."""
    scores = []
    for prompt in prompts:
        scores.append(1.0 if prompt in _scored_once else None)
        _scored_once.add(prompt)
    return scores
'''


@pytest.fixture(scope="module")
def user(tmp_path_factory) -> Path:
    from botgrpo_tasks import get_task

    home = tmp_path_factory.mktemp("user")
    rows = [{"prompt": ex.prompt, "answer": ex.reference["answer"]} for ex in get_task("arith_synth").train_examples()[:10]]
    (home / "prompts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (home / "rewards.py").write_text(REWARDS)
    return home


def _cfg(model: Path, user: Path, out: Path, *sets: str, algo: str | None = None):
    cfg = load_config(None, sets=[*SMALL, *sets], algo=algo)
    cfg.model.name_or_path, cfg.run.out_dir = str(model), str(out)
    cfg.run.task_options = {"path": str(user / "prompts.jsonl")}
    return cfg


def test_a_python_callable_is_a_reward_function_called_once_per_generation_batch(tiny_arith_model_dir, user,
                                                                                  tmp_path, monkeypatch):
    sizes = tmp_path / "sizes"

    def batch_size(completions, **kwargs):  # runs in a forked child: it reports through a file
        with open(sizes, "a") as f:
            f.write(f"{len(completions)}\n")
        return [float(sum(map(ord, c))) for c in completions]  # a score of its own for each distinct text

    cfg = _cfg(tiny_arith_model_dir, user, tmp_path / "run")
    cfg.reward.function = [batch_size, lambda completions, **kw: [1.0] * len(completions)]
    cfg.reward.weights = [1.0, 0.5]
    pairs = []  # (each row's completion, the score it trained with), per step
    to_token_rewards = loop.to_token_rewards

    def keep_scores(scored, *args, **kwargs):
        pairs.append(list(zip(scored.texts, scored.scores.tolist())))  # texts in row order, as generated
        return to_token_rewards(scored, *args, **kwargs)

    monkeypatch.setattr(loop, "to_token_rewards", keep_scores)
    result = train(cfg)
    assert sizes.read_text().split() == ["8", "8"]  # one call per step, on its whole batch
    for step in pairs:  # each row's score is its own completion's, not a neighbour's
        assert [score for _, score in step] == [sum(map(ord, text)) + 0.5 for text, _ in step]
        assert len({score for _, score in step}) > 1, step
    for m in result.metrics:
        assert m["reward/masked"] == 0 and m["reward/<lambda>/mean"] == 1.0
        assert m["reward/mean"] == pytest.approx(m["reward/batch_size/mean"] + 0.5)
    saved = (tmp_path / "run" / "config.yaml").read_text()
    assert "<callable " in saved and "batch_size>" in saved  # named, since it cannot be written as YAML


def test_dynamic_sampling_drops_constant_groups_and_keeps_as_many_as_a_step_takes(tiny_arith_model_dir, user,
                                                                                  tmp_path):
    """Round 1 draws prompts 0 and 1: prompt 1's group is constant (all 7) and is dropped. Round 2 draws
    prompts 2 and 3, both varied, and only one fits: the step trains prompts 0 and 2 (mean score
    (0 + 2) / 2 = 1), after two rounds, with no constant group. Keeping constant groups would train
    prompts 0 and 1 (mean 3.5) after one round; keeping past the step's share, 0, 2 and 3 (mean 5/3)."""
    cfg = _cfg(tiny_arith_model_dir, user, tmp_path / "run", "algo.dynamic_sampling=true", "algo.max_rounds=3",
               f"reward.function={user}/rewards.py:second_prompt_constant", "run.steps=1")
    (m,) = train(cfg).metrics
    assert m["groups/rounds"] == 2 and m["groups/zero_variance_frac"] == 0
    assert m["reward/mean"] == pytest.approx(1.0)


def test_a_failed_row_leaves_its_groups_statistics_alone(tiny_arith_model_dir, user, tmp_path):
    """Each group: one failed row, the others all 1.0. Apart from the failed row (a group of its own)
    every group is constant: dynamic sampling keeps none in either round, and GRPO's advantages and
    gradient are 0. Counted in, the failed row's 0 would make each group vary (kept in round 1, and
    advantages on its siblings)."""
    cfg = _cfg(tiny_arith_model_dir, user, tmp_path / "run", "algo.dynamic_sampling=true", "algo.max_rounds=2",
               f"reward.function={user}/rewards.py:first_fails", "run.steps=1", algo="grpo")
    (m,) = train(cfg).metrics
    assert m["reward/masked"] == 2 and m["reward/mean"] == 1.0 and m["groups/rounds"] == 2
    assert m["adv/std"] == 0 and m["grad_norm"] == 0


def test_check_names_the_function_that_masked_a_whole_step(tiny_arith_model_dir, user, tmp_path):
    cfg = _cfg(tiny_arith_model_dir, user, tmp_path / "run", f"reward.function={user}/rewards.py:nothing",
               "run.fail_on=[masked]")
    with pytest.raises(CheckFailed) as failed:
        train(cfg)
    message = str(failed.value)
    assert "\n" not in message and "completions of step 1 were masked" in message
    assert "every reward function (nothing) returned None" in message and "botgrpo reward score" in message


def test_eval_md_shows_each_functions_score_its_metrics_and_success_as_na(tiny_arith_model_dir, user, tmp_path):
    out = tmp_path / "eval"
    result = CliRunner().invoke(app, [
        "eval", "--task", "prompts", "--task-option", f"path={user / 'prompts.jsonl'}", "--model",
        str(tiny_arith_model_dir), "--function", f"{user}/rewards.py:reward_len", "--out", str(out), "--n", "2",
        "--max-new-tokens", "16", "--threads", "1"])
    assert result.exit_code == 0, f"{result.output}\n{result.exception!r}"
    md = (out / "eval.md").read_text()
    assert "Success: n/a: the reward reports no `success` metric" in md
    assert "| reward_len/score |" in md and "| longest |" in md  # the function's score and its log_metric
    assert "| success rate |" not in md and "pass@1" not in md
    figures = json.loads((out / "eval.json").read_text())["aggregates"]
    assert "success_rate" not in figures and figures["reward_len/score"] <= 0
    assert figures["ids_per_completion"] == pytest.approx(figures["length_mean"])  # eval passes completion_ids too
