"""--resume keeps the run's config; settings that cannot learn are refused with the reason."""

import pytest

from botgrpo_cli.config import explicit_values, load_config
from botgrpo_cli.config_resume import resume_config
from botgrpo_cli.errors import UserError
from botgrpo_cli.trainer.degenerate import check_settings


@pytest.fixture()
def run_dir(tmp_path):
    cfg = load_config(sets=["rollout.group_size=4", "rollout.prompts_per_step=4", "run.save_every=3",
                            f"run.out_dir={tmp_path}", "run.task_options={hf_token: hf_secret}"])
    cfg.save(tmp_path / "config.yaml")
    return tmp_path


def test_resume_takes_the_saved_config_and_allowed_changes(run_dir):
    given = explicit_values(sets=["run.steps=7", "log.every=5", "run.task_options={hf_token: hf_secret}"])
    cfg = resume_config(run_dir, given)
    assert (cfg.rollout.group_size, cfg.rollout.prompts_per_step, cfg.run.save_every) == (4, 4, 3)
    assert (cfg.run.steps, cfg.log.every) == (7, 5)
    assert cfg.run.task_options == {"hf_token": "hf_secret"}  # a redacted secret, given again


def test_resume_refuses_differing_values_and_lists_them(run_dir):
    given = explicit_values(sets=["rollout.group_size=8", "run.save_every=5", "run.steps=9",
                                  "run.task_options={hf_token: hf_secret}"])
    with pytest.raises(UserError) as err:
        resume_config(run_dir, given)
    message = str(err.value)
    assert "rollout.group_size: run has 4, command line gives 8" in message
    assert "run.save_every: run has 3, command line gives 5" in message and "run.steps" not in message.split("only")[0]


def test_resume_asks_again_for_a_redacted_secret(run_dir):
    with pytest.raises(UserError, match=r"redacted secrets \(run.task_options\)"):
        resume_config(run_dir, explicit_values(sets=["run.steps=7"]))


def test_resume_without_a_saved_config_is_one_line(tmp_path):
    with pytest.raises(UserError, match="config.yaml is missing"):
        resume_config(tmp_path, {})


def _cfg(*sets):
    return load_config(sets=list(sets))


@pytest.mark.parametrize("algo", ["grpo", "dr_grpo", "dapo", "gspo", "bot_grpo"])
def test_group_size_one_with_a_group_baseline_is_refused(algo):
    with pytest.raises(UserError, match="group_size=1 .*every advantage is 0"):
        check_settings(load_config(sets=["rollout.group_size=1"], algo=algo), print)


def test_group_size_one_is_allowed_when_process_rewards_still_teach():
    check_settings(load_config(sets=["rollout.group_size=1"], algo="pure"), print)  # PURE's process returns
    with pytest.raises(UserError, match="group_size=1"):
        check_settings(load_config(sets=["rollout.group_size=1", "reward.lambda_tok=0"], algo="pure"), print)


def test_temperature_zero_is_refused_and_no_steps_is_warned_once():
    with pytest.raises(UserError, match="temperature=0 is greedy"):
        check_settings(_cfg("rollout.temperature=0"), print)
    for greedy in ("rollout.top_k=1", "rollout.min_p=1"):
        with pytest.raises(UserError, match="keeps only the most likely token"):
            check_settings(_cfg(greedy), print)
    check_settings(_cfg("rollout.top_k=2", "rollout.min_p=0.5"), print)
    said = []
    check_settings(_cfg("run.steps=0"), said.append)
    assert said == ["run.steps=0: no training step will run"]
    said.clear()
    check_settings(_cfg("run.steps=5"), said.append, resume_step=5)
    assert len(said) == 1 and "checkpoint is at step 5" in said[0]
    said.clear()
    check_settings(_cfg(), said.append)
    assert said == []
