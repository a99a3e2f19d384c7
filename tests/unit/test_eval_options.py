"""`botgrpo eval` takes its settings from the training config's own sections: the flags set config
fields (cli/evaluate.SETS), the config is checked by the trainer's rules, and sampling parameters are
built from it in one place (SamplingParams.from_config) for training, eval and the benches."""

from __future__ import annotations

import dataclasses

import pytest
from typer.testing import CliRunner

from botgrpo_cli.cli import app
from botgrpo_cli.config import Config, RolloutConfig, RunConfig
from botgrpo_cli.errors import UserError
from botgrpo_cli.evaluation import runner
from botgrpo_cli.evaluation.runner import EvalOptions, check
from botgrpo_cli.rollout import SamplingParams


def _get(cfg: Config, dotted: str):
    section, key = dotted.split(".")
    return getattr(getattr(cfg, section), key)


def _opts_of(monkeypatch, tmp_path, *flags: str) -> EvalOptions:
    """The EvalOptions `botgrpo eval FLAGS` hands to run_eval (which is stopped there)."""
    seen = []

    def stop(opts):
        seen.append(opts)
        raise UserError("stopped before loading anything")

    monkeypatch.setattr(runner, "run_eval", stop)
    result = CliRunner().invoke(app, ["eval", "--model", "m", "--out", str(tmp_path), *flags])
    assert "stopped before loading anything" in str(result.exception), result.output
    return seen[0]


def test_every_flag_that_sets_a_config_field_reaches_eval_options_config(monkeypatch, tmp_path):
    from botgrpo_cli.cli.evaluate import SETS

    expected = {"run.task": "arith_synth", "run.task_options": {"x": 1}, "run.seed": 3, "reward.workers": 2,
                "rollout.temperature": 0.5, "rollout.top_p": 0.9, "rollout.top_k": 7, "rollout.min_p": 0.1,
                "rollout.repetition_penalty": 1.2, "rollout.max_new_tokens": 9, "run.system_prompt": "S",
                "run.chat_template_kwargs": {"enable_thinking": False}, "run.chat_template": "always",
                "rollout.thinking_budget": 5, "model.autocast": "off", "run.tools": ["calculator"],
                "run.environment": "env.py:Env", "rollout.max_turns": 3, "reward.service": "math",
                "reward.url": ["http://127.0.0.1:9"]}
    cfg = _opts_of(monkeypatch, tmp_path, "--task", "arith_synth", "--task-option", "x=1", "--seed", "3",
                   "--workers", "2", "--temperature", "0.5", "--top-p", "0.9", "--top-k", "7", "--min-p", "0.1",
                   "--repetition-penalty", "1.2", "--max-new-tokens", "9", "--system-prompt", "S",
                   "--chat-template-kwarg", "enable_thinking=false", "--chat-template", "always",
                   "--thinking-budget", "5", "--autocast", "off", "--tool", "calculator", "--environment",
                   "env.py:Env", "--max-turns", "3", "--service", "math", "--url", "http://127.0.0.1:9").config
    assert {dotted: _get(cfg, dotted) for dotted in expected} == expected
    function = _opts_of(monkeypatch, tmp_path, "--task", "prompts", "--function", "f.py:score").config
    assert function.reward.function == "f.py:score" and function.reward.url is None
    assert set(expected) | {"reward.function"} == set(SETS.values())  # every such flag is covered above


def test_a_bad_flag_value_is_named_by_its_flag(tmp_path):
    result = CliRunner().invoke(app, ["eval", "--task", "arith_synth", "--model", "m", "--out", str(tmp_path),
                                      "--top-k", "-1"])
    assert result.exit_code == 1 and "--top-k must be >= 0, got -1" in str(result.exception)
    assert "rollout.top_k" not in str(result.exception) and not tmp_path.joinpath("eval.json").exists()


def test_eval_checks_its_config_by_the_trainers_rules(tmp_path):
    bad = EvalOptions(model="m", out=tmp_path, config=Config(run=RunConfig(task="arith_synth"),
                                                             rollout=RolloutConfig(top_p=0.0)))
    with pytest.raises(UserError, match=r"rollout\.top_p must be in \(0, 1\], got 0\.0"):
        check(bad)
    good = EvalOptions(model="m", out=tmp_path, config=Config(rollout=RolloutConfig(temperature=1)))
    checked = check(good)
    assert checked.rollout.temperature == 1.0 and isinstance(checked.rollout.temperature, float)  # typed
    assert good.config.rollout.temperature == 1 and isinstance(good.config.rollout.temperature, int)  # a copy
    with pytest.raises(UserError, match="is larger than --n 2"):
        check(dataclasses.replace(good, n=2, ks=[1, 4]))


def test_eval_json_records_the_settings_by_the_names_it_always_had(tmp_path):
    opts = EvalOptions(model="m", out=tmp_path, config=Config(run=RunConfig(task="arith_synth", seed=5),
                                                              rollout=RolloutConfig(top_k=4)))
    recorded = runner.recorded(opts)
    assert set(recorded) == {
        "task", "model", "out", "n", "ks", "temperature", "top_p", "top_k", "min_p", "repetition_penalty",
        "max_new_tokens", "seed", "workers", "split", "limit", "task_options", "against", "judge", "render",
        "batch_size", "deadline_ms", "system_prompt", "chat_template_kwargs", "chat_template", "thinking_budget",
        "autocast", "reward_function", "reward_url", "reward_service", "tools", "environment", "max_turns"}
    assert (recorded["task"], recorded["seed"], recorded["top_k"], recorded["reward_url"]) == ("arith_synth", 5, 4, [])


def test_sampling_params_take_every_rollout_setting_and_the_tasks_defaults():
    from botgrpo_tasks import get_task

    task = get_task("arith_synth")
    rollout = RolloutConfig(max_new_tokens=7, temperature=0.3, top_p=0.8, top_k=5, min_p=0.05,
                            repetition_penalty=1.3, stop=["END"], thinking_budget=4)
    params = SamplingParams.from_config(rollout, task, seed=9)
    shared = {f.name for f in dataclasses.fields(SamplingParams)} & {f.name for f in dataclasses.fields(RolloutConfig)}
    assert shared == {"max_new_tokens", "temperature", "top_p", "top_k", "min_p", "repetition_penalty", "stop",
                      "thinking_budget"}
    assert {k: getattr(params, k) for k in shared} == {**{k: getattr(rollout, k) for k in shared}, "stop": ("END",)}
    assert (params.seed, params.think_tags) == (9, task.think_tags)
    unset = SamplingParams.from_config(RolloutConfig(), task)
    assert (unset.max_new_tokens, unset.stop, unset.seed) == (task.max_new_tokens, tuple(task.stop), 0)


def test_sampling_params_are_built_in_one_place():
    """Every caller in the product (trainer, eval, the benches, bootstrap) builds them from a
    RolloutConfig through SamplingParams.from_config, never field by field."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    built = [str(p.relative_to(root)) for p in sorted((root / "botgrpo_cli").rglob("*.py"))
             if re.search(r"\bSamplingParams\(", p.read_text(encoding="utf-8"))]
    assert built == []
