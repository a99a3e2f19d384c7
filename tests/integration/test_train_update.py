"""Micro-batching (gradient accumulation) gives the full batch's update, for every loss aggregation."""

from __future__ import annotations

import pytest
import torch
from transformers import Qwen2Config, Qwen2ForCausalLM

from botgrpo_cli.config import load_config
from botgrpo_cli.trainer.logprobs import batch_logps
from botgrpo_cli.trainer.update import UpdateInputs, make_optimizer, update


def _model() -> Qwen2ForCausalLM:
    torch.manual_seed(0)
    return Qwen2ForCausalLM(Qwen2Config(vocab_size=50, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                        num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=64))


def _inputs(model) -> UpdateInputs:
    g = torch.Generator().manual_seed(1)
    prompts = [[1, 2, 3], [4, 5], [6], [7, 8, 9, 10], [11, 12], [13]]
    lengths = torch.tensor([5, 2, 7, 1, 4, 6])
    ids = torch.randint(2, 50, (6, 7), generator=g)
    mask = torch.arange(7)[None, :] < lengths[:, None]
    ids[~mask] = 0
    adv = torch.randn(6, 7, generator=g) * mask
    old = batch_logps(model, prompts, ids, mask, 0, 1.0, 16) + 0.05 * torch.randn(6, 7, generator=g) * mask
    return UpdateInputs(prompts, ids, mask, adv, old, None)


@pytest.fixture(autouse=True)
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny matmuls: more threads only add contention
    yield
    torch.set_num_threads(threads)


@pytest.mark.parametrize("algo", ["grpo", "dapo", "dr_grpo", "gspo"])
def test_micro_batches_match_one_full_batch(algo):
    grads = []
    for mb in (6, 4, 1):
        model = _model()
        cfg = load_config(None, algo=algo, sets=[f"optim.micro_batch_size={mb}", "optim.grad_clip=0"])
        opt, sched = make_optimizer(model, cfg)
        metrics = update(model, opt, sched, _inputs(model), cfg, pad_id=0, max_len=7)
        grads.append((torch.cat([p.detach().flatten() for p in model.parameters()]), metrics))
    (full, m_full), *rest = grads
    for params, m in rest:
        torch.testing.assert_close(params, full, rtol=1e-5, atol=1e-6)
        assert m["loss"] == pytest.approx(m_full["loss"], rel=1e-4, abs=1e-6)
        assert m["grad_norm"] == pytest.approx(m_full["grad_norm"], rel=1e-4)
    assert m_full["grad_norm"] > 0
