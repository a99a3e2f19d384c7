"""Options defined once: choices come from the registries, estimator and loss options are checked
against the registered functions' signatures, one error type for unknown names."""

from __future__ import annotations

import pytest
import torch

from botgrpo_cli.algos import ADVANTAGES, LOSSES, PRESETS, policy_loss
from botgrpo_cli.cli.options import comma_list, positive_int
from botgrpo_cli.config import describe, load_config
from botgrpo_cli.errors import UnknownName, UserError
from botgrpo_tasks import get_task
from botgrpo_tasks.errors import TaskError


def test_help_lists_every_registered_name():
    text = {line.split(" ")[0]: line for line in describe().splitlines()}
    assert all(name in text["algo.advantage"] for name in ADVANTAGES.names())  # dr_grpo included
    assert all(name in text["algo.loss"] for name in LOSSES.names())
    assert all(name in text["algo.name"] for name in PRESETS)


@pytest.mark.parametrize("sets,needle", [
    (["algo.loss_options={eps_hi: 0.3}"], "unknown policy loss 'clip' option 'eps_hi'; did you mean eps_high"),
    (["algo.advantage_options={scal: batch}"], "did you mean scale?"),
    (["algo.loss_agg=token_sum"], "must be one of seq_mean_token_mean, token_mean, seq_mean_token_sum_norm"),
])
def test_bad_options_fail_before_training(sets, needle):
    with pytest.raises(UserError, match=None) as info:
        load_config(sets=sets)
    assert needle in str(info.value)


def test_loss_options_reach_the_loss_and_its_own_defaults_apply():
    logp = torch.tensor([[0.0, 0.0]])
    old = torch.tensor([[-0.5, 0.5]])  # ratios e^0.5 and e^-0.5
    adv, mask = torch.ones(1, 2), torch.ones(1, 2)
    wide, _ = policy_loss("clip", logp=logp, logp_old=old, advantages=adv, mask=mask, loss_agg="token_mean",
                          eps_low=0.9, eps_high=0.9)
    default, _ = policy_loss("clip", logp=logp, logp_old=old, advantages=adv, mask=mask, loss_agg="token_mean")
    assert float(wide) < float(default)  # a wider clip keeps more of the ratio e^0.5
    assert load_config(algo="gspo").algo.loss_options == {"eps_low": 3e-4, "eps_high": 4e-4}


def test_unknown_names_are_one_error_type():
    with pytest.raises(UnknownName) as info:
        ADVANTAGES["bot_grp"]
    assert isinstance(info.value, KeyError) and str(info.value).startswith("unknown advantage estimator 'bot_grp'")
    with pytest.raises(TaskError) as task_info:
        get_task("nope")
    assert isinstance(task_info.value, KeyError) and str(task_info.value).startswith("unknown task 'nope'")


def test_comma_lists():
    assert comma_list(" 1, 2,,4 ", "--workers", positive_int) == [1, 2, 4]
    for bad in ("", " , ", "1,x", "0"):
        with pytest.raises(UserError, match="--workers"):
            comma_list(bad, "--workers", positive_int)
