"""The lean decode loop on Gemma 3's text decoder (gemma3_text), against HF generate on the same
weights: a tiny random config built here (no download) with sliding-window layers narrower than
the prompts, two rope bases, random (1 + w) norms, a final logit soft-cap and tied embeddings."""

from __future__ import annotations

import pytest
import torch
from rollout_models import PROMPTS, tokenizer
from transformers import Gemma3ForCausalLM, Gemma3TextConfig

from botgrpo_cli.decoder_layers import unsupported_reason
from botgrpo_cli.rollout import HFEngine, SamplingParams
from botgrpo_cli.rollout.fast import DECODES, FastEngine
from botgrpo_cli.models.precision import autocast


@pytest.fixture(scope="module")
def tok():
    return tokenizer()


@pytest.fixture(autouse=True)
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def gemma3(tok, seed: int = 0, **overrides) -> Gemma3ForCausalLM:
    """Three layers (sliding, sliding, global) with a 4-column window; every weight random, the
    norms' too (they start at zero, where (1 + w) and w would not differ)."""
    torch.manual_seed(seed)
    cfg = dict(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=3,
               num_attention_heads=4, num_key_value_heads=2, head_dim=8, query_pre_attn_scalar=8,
               sliding_window=4, layer_types=["sliding_attention", "sliding_attention", "full_attention"],
               rope_parameters={"sliding_attention": {"rope_type": "default", "rope_theta": 10.0},
                                "full_attention": {"rope_type": "default", "rope_theta": 10_000.0}},
               final_logit_softcapping=3.0, max_position_embeddings=256, eos_token_id=tok.eos_token_id,
               pad_token_id=tok.pad_token_id, bos_token_id=tok.eos_token_id)
    m = Gemma3ForCausalLM(Gemma3TextConfig(**{**cfg, **overrides})).eval()
    with torch.no_grad():
        for name, p in m.named_parameters():
            if "norm" in name:
                p.normal_(0.0, 0.5)
    return m


def same_batches(a, b) -> None:
    assert a.texts == b.texts and a.offsets == b.offsets
    assert torch.equal(a.completion_ids, b.completion_ids) and torch.equal(a.mask, b.mask)
    assert torch.equal(a.finished, b.finished) and a.prompt_ids == b.prompt_ids


def test_the_loop_runs_gemma3_and_its_greedy_rows_equal_hf_generate(tok):
    m = gemma3(tok)
    fast = FastEngine(m, tok)
    assert fast.fallback is None and m.config.model_type in DECODES
    assert unsupported_reason(m) is not None  # the shared-prompt forward (Llama-class only) still declines it
    for stop in ((), ("e",)):
        p = SamplingParams(max_new_tokens=24, temperature=0.0, stop=stop)  # prompts + 24 >> the 4-column window
        same_batches(HFEngine(m, tok).generate(PROMPTS * 2, 3, p), fast.generate(PROMPTS * 2, 3, p))


def test_each_gemma3_piece_changes_the_rows(tok):
    """The equality above is not vacuous: without the window, or with one rope base for both layer
    types, HF generate itself gives other rows for these weights."""
    p = SamplingParams(max_new_tokens=24, temperature=0.0)
    ours = FastEngine(gemma3(tok), tok).generate(PROMPTS, 1, p).texts
    for change in (dict(sliding_window=64),
                   dict(rope_parameters={t: {"rope_type": "default", "rope_theta": 10_000.0}
                                         for t in ("sliding_attention", "full_attention")})):
        assert HFEngine(gemma3(tok, **change), tok).generate(PROMPTS, 1, p).texts != ours, change


def test_gemma3_prefill_logits_equal_the_model_forward_soft_cap_included(tok):
    """Greedy rows cannot see the final soft-cap (tanh keeps the order); the logits can."""
    from botgrpo_cli.rollout.fast import _Decoder

    m = gemma3(tok)
    tok.padding_side = "left"  # as the engines lay prompts out (rollout.hf.left_padded)
    batch = tok(PROMPTS, return_tensors="pt", padding=True)
    ids, ok = batch.input_ids, batch.attention_mask.bool()
    with torch.no_grad():
        want = m(input_ids=ids, attention_mask=batch.attention_mask).logits[:, -1]
        dec = _Decoder(m)
        h = m.model.embed_tokens(ids)
        cache = dec.new_cache(ids.shape[0], ids.shape[1], m.model.layers[0].self_attn.k_proj(h))
        got = dec.forward(ids, (ok.long().cumsum(1) - 1).clamp(min=0), cache, 0, ok)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    assert want.abs().max() <= 3.0  # capped at final_logit_softcapping


def test_gemma3_greedy_rows_equal_hf_generate_under_bf16_autocast_frozen_and_tied(tok):
    """A frozen model (evaluation, LoRA's base) with the head tied to the embedding: the head gets a
    bf16 copy for the call while the embedding stays float32, as under HF generate's autocast."""
    m = gemma3(tok).requires_grad_(False)
    assert m.lm_head.weight is m.model.embed_tokens.weight
    p = SamplingParams(max_new_tokens=16, temperature=0.0)
    with autocast(True):
        same_batches(HFEngine(m, tok).generate(PROMPTS, 2, p), FastEngine(m, tok).generate(PROMPTS, 2, p))
    assert m.lm_head.weight is m.model.embed_tokens.weight and m.lm_head.weight.dtype == torch.float32


def test_gemma3_with_attention_soft_capping_falls_back(tok):
    assert "soft-capping" in FastEngine(gemma3(tok, attn_logit_softcapping=50.0), tok).fallback
