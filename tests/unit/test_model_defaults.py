"""Model-dependent defaults (learning rate, micro-batch) and the chat / reasoning prompt options."""

from __future__ import annotations

import pytest

from botgrpo_cli.config import load_config
from botgrpo_cli.errors import UserError
from botgrpo_cli.trainer.defaults import MAX_AUTO_MICRO_BATCH, activation_bytes, auto_micro_batch, default_lr
from botgrpo_tasks import get_task

# SmolLM2-135M (LlamaConfig from its GGUF) and the bootstrapped tiny model's shape.
SMOL = {"hidden": 576, "intermediate": 1536, "layers": 30, "vocab": 49152}
TINY = {"hidden": 64, "intermediate": 256, "layers": 2, "vocab": 2048}


def test_learning_rate_by_origin_size_and_lora():
    assert default_lr(164_000, bootstrapped=True, lora=False) == 1e-3  # the tiny model keeps its own
    assert default_lr(134_515_008, bootstrapped=False, lora=False) == 1e-5
    assert default_lr(134_515_008, bootstrapped=False, lora=True) == 1e-4
    assert default_lr(7_600_000_000, bootstrapped=False, lora=False) == 1e-6


def test_micro_batch_fits_the_budget_and_keeps_the_cap_for_tiny_models():
    # SmolLM2 at ~100 prompt + 256 new tokens: ~0.65 GB a row in float32 (measured 11.5 GB at 16 rows).
    per_row = activation_bytes(356, 256, SMOL, checkpointing=False, param_bytes=4)
    assert 0.5e9 < per_row < 0.8e9
    rows = auto_micro_batch(356, 256, SMOL, False, 4, budget_gb=2.0)
    assert rows * per_row <= 2 * 2**30 < (rows + 1) * per_row
    assert auto_micro_batch(356, 256, SMOL, True, 4, 2.0) > rows  # checkpointing keeps less per layer
    assert auto_micro_batch(100, 48, TINY, False, 4, 2.0) == MAX_AUTO_MICRO_BATCH == 64
    assert auto_micro_batch(100_000, 50_000, SMOL, False, 4, 0.1) == 1  # never 0


def test_unset_defaults_validate_and_explicit_ones_are_checked():
    cfg = load_config()
    assert cfg.optim.lr is None and cfg.optim.micro_batch_size is None
    with pytest.raises(UserError, match="optim.lr must be > 0"):
        load_config(sets=["optim.lr=0"])
    assert load_config(sets=["rollout.thinking_budget=64", "rollout.engine=vllm"]).rollout.thinking_budget == 64


class ChatTok:
    """The call a chat template gets: messages plus keyword arguments (ChatML-like rendering)."""

    chat_template = "chatml"

    def apply_chat_template(self, messages, tokenize, add_generation_prompt, **kwargs):
        text = "".join(f"<|{m['role']}|>{m['content']}\n" for m in messages)
        return text + "<|assistant|>" + ("<think>\n" if kwargs.get("enable_thinking") else "")


def test_system_prompt_and_template_kwargs_reach_the_template():
    task = get_task("arith_synth")
    ex = task.eval_examples()[0]
    text = task.format_prompt(ex, ChatTok(), "Be brief.", {"enable_thinking": True})
    assert text.startswith("<|system|>Be brief.\n<|user|>") and text.endswith("<think>\n")
    assert task.think_options(text) == {"think_tags": ["<think>", "</think>"], "think_open": True}
    plain = task.format_prompt(ex, ChatTok())
    assert "<|system|>" not in plain and task.think_options(plain)["think_open"] is False
    assert task.format_prompt(ex, None, "Be brief.") == f"Be brief.\n\n{ex.prompt}"


def test_think_tags_task_option():
    assert get_task("arith_synth", think_tags=None).think_options("x") == {"think_tags": None}
    t = get_task("react", think_tags=["<reasoning>", "</reasoning>"])
    assert t.think_options("a <reasoning>")["think_open"] is True
    with pytest.raises(Exception, match="think_tags must be"):
        get_task("arith_synth", think_tags="<think>")


def test_samples_page_shows_the_sign_of_small_advantages():
    import re

    from botgrpo_cli.trainer.samples import FLOOR, alpha, render_completion

    # BoT-GRPO's run-on signal: +0.165 on every unpenalised token next to a -3 penalty span.
    assert alpha(0.165, 3.0) > 0.3 and alpha(-3.0, 3.0) == pytest.approx(0.7) and alpha(0.0, 3.0) == 0.0
    assert alpha(1e-4, 3.0) >= FLOOR  # tiny but non-zero: still tinted
    assert alpha(0.1, 3.0) < alpha(0.5, 3.0) < alpha(2.0, 3.0)  # still ordered by magnitude
    html_text = render_completion("ab c", [(0, 1), (1, 2), (2, 4)], [0.165, -3.0, 0.0])
    colours = re.findall(r"rgba\((\d+,\d+,\d+),([\d.]+)\)", html_text)
    assert colours[0][0] == "40,170,60" and float(colours[0][1]) > 0.3  # green, visible
    assert colours[1][0] == "220,50,50" and float(colours[2][1]) == 0.0
