"""Small mismatches a new user meets: thinking options on a model without thinking tags, a hub id on
an offline machine, curves.png showing held-out success beside the training batch's."""

from __future__ import annotations

import time

import pytest

from botgrpo_cli.errors import UserError
from botgrpo_cli.models.loading import thinking_mismatch
from botgrpo_cli.trainer.policy import check_hub_reachable

TAGS = ("<think>", "</think>")


class Tok:
    def __init__(self, template, vocab=()):
        self.chat_template, self.vocab = template, {t: i for i, t in enumerate(vocab)}

    def get_vocab(self):
        return self.vocab


CHATML = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>{% endfor %}"
QWEN3 = CHATML + "{% if enable_thinking is defined and enable_thinking is false %}<think>\n\n</think>{% endif %}"


def test_thinking_options_on_a_template_without_thinking_warn():
    assert "rollout.thinking_budget=64 does nothing" in thinking_mismatch(Tok(CHATML), TAGS, 64, {})
    said = thinking_mismatch(Tok(CHATML), TAGS, None, {"enable_thinking": False})
    assert "enable_thinking=False" in said and "no enable_thinking switch" in said


def test_thinking_options_that_fit_say_nothing():
    assert thinking_mismatch(Tok(QWEN3), TAGS, 64, {"enable_thinking": False}) is None
    assert thinking_mismatch(Tok(CHATML, vocab=["<think>"]), TAGS, 64, {}) is None  # the model emits the tag itself
    assert thinking_mismatch(Tok(CHATML), TAGS, None, {}) is None  # nothing asked


def test_a_hub_id_offline_fails_at_once_with_one_line(monkeypatch, tmp_path):
    from huggingface_hub import constants

    monkeypatch.setenv("HF_HOME", str(tmp_path))  # an empty hub cache
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    started = time.monotonic()
    with pytest.raises(UserError, match="'someorg/some-model' is a hub id, this machine is offline") as err:
        check_hub_reachable("someorg/some-model")
    assert time.monotonic() - started < 10 and "\n" not in str(err.value)


def test_an_unreachable_hub_is_offline_too(monkeypatch, tmp_path):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "ENDPOINT", "https://hub.invalid")  # .invalid never resolves (RFC 2606)
    for proxy in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(proxy, raising=False)
    with pytest.raises(UserError, match="https://hub.invalid unreachable"):
        check_hub_reachable("someorg/some-model")


def test_curves_show_held_out_success_beside_the_batch(tmp_path):
    from PIL import Image

    from botgrpo_cli.evaluation.plots import plot_training

    records = [{"step": s, "reward/mean": -0.5, "success": 0.1 * (s % 2)} for s in range(1, 11)]
    records[4]["eval/success"] = 0.2
    png = plot_training(records, tmp_path / "curves.png", "t",
                        held_out=[(0, {"eval/success": 0.1, "eval/score": -0.2}), (10, {"eval/success": 0.3})])
    with Image.open(png) as im:
        assert im.size[0] > im.size[1]
    assert plot_training([], tmp_path / "none.png", "t") is None


def test_library_future_warnings_are_hidden_unless_debugging():
    import os
    import subprocess
    import sys

    code = ("import warnings, botgrpo_cli.console\n"
            "warnings.warn_explicit('`x` is deprecated', FutureWarning, 'modeling_utils.py', 1, "
            "module='transformers.modeling_utils')\n")
    env = {k: v for k, v in os.environ.items() if k not in ("BOTGRPO_DEBUG", "PYTHONWARNINGS")}
    quiet = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    loud = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**env, "BOTGRPO_DEBUG": "1"})
    assert quiet.returncode == 0 and "FutureWarning" not in quiet.stderr
    assert "FutureWarning" in loud.stderr
