"""The shared-prompt training forward gives the plain forward's log-probs, entropies and gradients."""

from __future__ import annotations

import pytest
import torch

from botgrpo_cli.trainer.logprobs import forward_logps
from botgrpo_cli.models.precision import autocast
from botgrpo_cli.trainer.shared_prompt import runs_of_equal_prompts, why_not_shared
import rollout_models


@pytest.fixture(scope="module")
def tok():
    return rollout_models.tokenizer()


def _batch(tok, group: int = 3):
    """Three prompts of different lengths, `group` completions each (of different lengths: the
    columns past a row's end are padding), and one more row with a prompt of its own."""
    prompts = [tok(p, add_special_tokens=False)["input_ids"] for p in rollout_models.PROMPTS]
    rows = [p for p in prompts for _ in range(group)] + [prompts[0][:2]]
    g = torch.Generator().manual_seed(0)
    completions = torch.randint(2, len(tok), (len(rows), 9), generator=g)
    completions[1, 5:] = tok.pad_token_id
    completions[4, 2:] = tok.eos_token_id
    return rows, completions


def _both(model, rows, completions, pad_id, **kw):
    shared = forward_logps(model, rows, completions, pad_id, 0.7, with_entropy=True, **kw)
    plain = forward_logps(model, rows, completions, pad_id, 0.7, with_entropy=True, share_prompts=False, **kw)
    return shared, plain


@pytest.mark.parametrize("kind", ["qwen2", "qwen3", "llama"])
def test_log_probs_entropy_and_gradients_equal_the_plain_forward(tok, kind):
    model = rollout_models.model(kind, tok).train()
    assert why_not_shared(model) is None  # the shared forward really runs (else this compares plain to plain)
    rows, completions = _batch(tok)
    assert len(runs_of_equal_prompts(rows)) < len(rows)
    weights = torch.randn(completions.shape, generator=torch.Generator().manual_seed(1))
    grads = []
    for share in (True, False):
        model.zero_grad()
        logp, entropy = forward_logps(model, rows, completions, tok.pad_token_id, 0.7, with_entropy=True,
                                      share_prompts=share)
        (logp * weights).sum().backward()
        grads.append({n: p.grad.clone() for n, p in model.named_parameters()})
        if share:
            shared = (logp.detach(), entropy)
        else:
            plain = (logp.detach(), entropy)
    torch.testing.assert_close(shared[0], plain[0], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(shared[1], plain[1], atol=1e-5, rtol=1e-5)
    for name, g in grads[0].items():
        torch.testing.assert_close(g, grads[1][name], atol=1e-5, rtol=1e-4, msg=name)


def test_lora_adapters_are_in_the_shared_forward(tok):
    from peft import LoraConfig, get_peft_model

    torch.manual_seed(1)  # random B: the adapter really changes the outputs
    lora = get_peft_model(rollout_models.model("llama", tok), LoraConfig(
        r=4, lora_alpha=8, target_modules=["q_proj", "v_proj", "down_proj"], init_lora_weights=False,
        task_type="CAUSAL_LM")).train()
    assert why_not_shared(lora) is None
    rows, completions = _batch(tok)
    (shared, _), (plain, _) = _both(lora, rows, completions, tok.pad_token_id)
    torch.testing.assert_close(shared, plain, atol=1e-5, rtol=1e-5)
    with lora.disable_adapter():  # the reference policy: adapters off
        (off, _), _ = _both(lora, rows, completions, tok.pad_token_id)
    assert (off - shared).abs().max() > 1e-3


def test_bf16_autocast_stays_close_to_the_plain_forward(tok):
    model = rollout_models.model("qwen3", tok).train()
    rows, completions = _batch(tok)
    with autocast(True):
        (shared, _), (plain, _) = _both(model, rows, completions, tok.pad_token_id)
    assert (shared - plain).abs().mean() < 0.02


def test_runs_of_equal_prompts():
    assert runs_of_equal_prompts([[1], [1], [2], [1], [1], [1]]) == [2, 1, 3]
    assert runs_of_equal_prompts([[5, 6]]) == [1]


def test_the_plain_forward_stays_where_sharing_is_not_exact(tok):
    gpt2 = rollout_models.model("gpt2", tok)
    assert "gpt2" in why_not_shared(gpt2)
    llama = rollout_models.model("llama", tok)
    assert why_not_shared(llama) is None
    (getattr(llama, "activation_checkpointing_enable", None) or llama.gradient_checkpointing_enable)()
    assert why_not_shared(llama) == "gradient checkpointing"

    class Wrapped(torch.nn.Module):  # what DistributedDataParallel looks like from outside
        def __init__(self, module):
            super().__init__()
            self.module = module

    assert "distributed" in why_not_shared(Wrapped(rollout_models.model("qwen2", tok)))
    dropout = rollout_models.model("qwen2", tok)
    dropout.config.attention_dropout = 0.1
    assert why_not_shared(dropout.train()) == "attention dropout" and why_not_shared(dropout.eval()) is None
