"""top_k, min_p and repetition_penalty: the lean loop samples from the support transformers' generate
gives them (its own warpers as the reference), and both engines agree token for token where the
options leave one choice (greedy, or a support of one token)."""

from __future__ import annotations

import pytest
import torch
from rollout_models import PROMPTS, model, tokenizer
from transformers import (MinPLogitsWarper, RepetitionPenaltyLogitsProcessor, TemperatureLogitsWarper,
                          TopKLogitsWarper, TopPLogitsWarper)

from botgrpo_cli.rollout import HFEngine, SamplingParams
from botgrpo_cli.rollout.fast import FastEngine, pick
from botgrpo_cli.rollout.sampling import filtered_logits, penalize_repeats, seen_tokens


@pytest.fixture(scope="module")
def tok():
    return tokenizer()


@pytest.fixture(autouse=True)
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def hf_warped(logits: torch.Tensor, temperature: float, top_k: int, top_p: float, min_p: float) -> torch.Tensor:
    """generate's warpers in generate's order (transformers' GenerationMixin._get_logits_processor)."""
    ids = torch.zeros((logits.shape[0], 1), dtype=torch.long)
    out = TemperatureLogitsWarper(temperature)(ids, logits.clone())
    if top_k:
        out = TopKLogitsWarper(top_k)(ids, out)
    if top_p < 1:
        out = TopPLogitsWarper(top_p)(ids, out)
    if min_p:
        out = MinPLogitsWarper(min_p)(ids, out)
    return out


@pytest.mark.parametrize("temperature,top_k,top_p,min_p", [
    (1.0, 5, 1.0, 0.0), (0.7, 0, 0.9, 0.0), (1.0, 0, 1.0, 0.1), (1.3, 20, 0.8, 0.05), (0.5, 3, 0.5, 0.3),
    (1.0, 0, 1.0, 0.0)])
def test_filtered_support_and_probabilities_equal_generates_warpers(temperature, top_k, top_p, min_p):
    logits = torch.randn(16, 300, generator=torch.Generator().manual_seed(3)) * 3
    ours = filtered_logits(logits, temperature, top_k, top_p, min_p)
    theirs = hf_warped(logits, temperature, top_k, top_p, min_p)
    assert torch.equal(torch.isfinite(ours), torch.isfinite(theirs))
    kept = torch.isfinite(ours).sum(1)
    if (top_k, top_p, min_p) != (0, 1.0, 0.0):
        assert bool((kept < 300).all()) and bool((kept >= 1).all())  # the options really cut something
    torch.testing.assert_close(torch.softmax(ours, -1), torch.softmax(theirs, -1))


def test_repetition_penalty_equals_generates_and_skips_padding():
    logits = torch.randn(3, 50, generator=torch.Generator().manual_seed(0))
    ids = torch.tensor([[7, 7, 2, 9], [1, 1, 4, 5], [1, 3, 3, 3]])  # rows 2, 3 start with one / no pad (id 1)
    valid = torch.tensor([[1, 1, 1, 1], [0, 0, 1, 1], [0, 1, 1, 1]]).bool()
    ours = penalize_repeats(logits, seen_tokens(ids, valid, 50), 1.5)
    # generate's processor on each row without its padding (versions differ on how they skip it in a batch)
    theirs = torch.cat([RepetitionPenaltyLogitsProcessor(1.5)(row[ok][None], logit[None].clone())
                        for row, ok, logit in zip(ids, valid, logits)])
    torch.testing.assert_close(ours, theirs)
    assert ours[1, 1] == logits[1, 1] and ours[2, 1] == logits[2, 1]  # the pad id is not penalised
    assert ours[0, 7] != logits[0, 7] and ours[2, 3] != logits[2, 3]


def test_pick_samples_only_the_top_k_and_min_p_sets():
    logits = torch.log(torch.tensor([[0.4, 0.3, 0.2, 0.1]]))
    u = torch.rand(2000, generator=torch.Generator().manual_seed(0))
    top2 = pick(logits.expand(2000, 4), u, SamplingParams(temperature=1.0, top_k=2))
    assert set(top2.tolist()) == {0, 1} and abs(float((top2 == 0).float().mean()) - 0.4 / 0.7) < 0.05
    above = pick(logits.expand(2000, 4), u, SamplingParams(temperature=1.0, min_p=0.6))  # keeps p >= 0.24
    assert set(above.tolist()) == {0, 1}
    seen = torch.tensor([[True, False, False, False]])
    assert pick(logits, u[:1], SamplingParams(temperature=0.0, repetition_penalty=4.0), seen).tolist() == [1]


def same_tokens(a, b) -> None:
    assert a.texts == b.texts and torch.equal(a.completion_ids, b.completion_ids) and torch.equal(a.mask, b.mask)


@pytest.mark.parametrize("kind", ["llama", "qwen2"])
def test_greedy_with_repetition_penalty_equals_hf_generate_over_padded_prompts(tok, kind):
    m = model(kind, tok)
    p = SamplingParams(max_new_tokens=24, temperature=0.0, repetition_penalty=1.8)
    fast = FastEngine(m, tok).generate(PROMPTS, 2, p)  # prompts of different lengths: left padding in HF's batch
    same_tokens(HFEngine(m, tok).generate(PROMPTS, 2, p), fast)
    plain = FastEngine(m, tok).generate(PROMPTS, 2, SamplingParams(max_new_tokens=24, temperature=0.0))
    assert fast.texts != plain.texts  # the penalty changed what was generated


@pytest.mark.parametrize("option", [{"top_k": 1}, {"min_p": 1.0}])
def test_a_support_of_one_token_samples_the_greedy_tokens_in_both_engines(tok, option):
    m = model("llama", tok)
    greedy = FastEngine(m, tok).generate(PROMPTS, 1, SamplingParams(max_new_tokens=16, temperature=0.0))
    sampled = SamplingParams(max_new_tokens=16, temperature=1.0, seed=5, **option)
    same_tokens(FastEngine(m, tok).generate(PROMPTS, 3, sampled), HFEngine(m, tok).generate(PROMPTS, 3, sampled))
    assert FastEngine(m, tok).generate(PROMPTS, 1, sampled).texts == greedy.texts


def test_left_padding_is_not_a_seen_token():
    """A penalty below 1 favours seen tokens: were the padding counted (by either engine), the short
    prompt's row would pick the pad id, here a likely token its prompt does not hold, not its greedy one."""
    tok = tokenizer()
    m = model("llama", tok)
    short = PROMPTS[2]  # the shortest prompt: left-padded in a batch with the others
    ids = tok(short, add_special_tokens=False)["input_ids"]
    with torch.no_grad():
        logits = m(torch.tensor([ids])).logits[0, -1]
    ranked = [t for t in logits.argsort(descending=True).tolist() if t not in ids and t != tok.eos_token_id]
    greedy, runner_up = ranked[0], ranked[1]
    assert 0 < logits[runner_up] and logits[greedy] < 10 * logits[runner_up]  # counted, the pad would win
    tok.pad_token = tok.convert_ids_to_tokens(runner_up)
    p = SamplingParams(max_new_tokens=4, temperature=0.0, repetition_penalty=0.1)
    hf, fast = HFEngine(m, tok).generate(PROMPTS, 1, p), FastEngine(m, tok).generate(PROMPTS, 1, p)
    same_tokens(hf, fast)
    assert int(hf.completion_ids[2, 0]) == greedy
