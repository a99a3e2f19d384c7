"""The lean decode loop against HF generate on the same weights: Qwen2/Qwen3/Llama, LoRA, the tiny
bootstrapped model; greedy rows must be token-for-token equal, sampled rows reproducible by seed."""

from __future__ import annotations

import pytest
import torch
from rollout_models import PROMPTS, model, tokenizer

from botgrpo_cli.rollout import HFEngine, SamplingParams
from botgrpo_cli.rollout.fast import FastEngine, pick, unsupported_reason
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


def same_batches(a, b) -> None:
    assert a.texts == b.texts and a.offsets == b.offsets
    assert torch.equal(a.completion_ids, b.completion_ids) and torch.equal(a.mask, b.mask)
    assert torch.equal(a.finished, b.finished) and a.prompt_ids == b.prompt_ids


@pytest.mark.parametrize("kind", ["qwen2", "qwen3", "llama"])
def test_greedy_equals_hf_generate(tok, kind):
    m = model(kind, tok)
    fast = FastEngine(m, tok)
    assert fast.fallback is None
    for stop in ((), ("e",)):
        p = SamplingParams(max_new_tokens=20, temperature=0.0, stop=stop)
        same_batches(HFEngine(m, tok).generate(PROMPTS * 2, 3, p), fast.generate(PROMPTS * 2, 3, p))


def test_greedy_equals_hf_generate_with_lora(tok):
    from peft import LoraConfig, get_peft_model

    m = model("llama", tok)
    torch.manual_seed(1)  # init_lora_weights=False: B is random too, so the adapter changes the outputs
    lora = get_peft_model(m, LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj", "down_proj"],
                                        init_lora_weights=False, task_type="CAUSAL_LM"))
    lora.train()  # as the trainer hands it over
    p = SamplingParams(max_new_tokens=16, temperature=0.0)
    plain = HFEngine(model("llama", tok), tok).generate(PROMPTS, 2, p)
    ours = FastEngine(lora, tok).generate(PROMPTS, 2, p)
    same_batches(HFEngine(lora, tok).generate(PROMPTS, 2, p), ours)
    assert ours.texts != plain.texts  # the adapter was really applied
    assert lora.training  # the engine restores the mode it found (eval while sampling: no dropout)


def test_greedy_equals_hf_generate_on_the_bootstrapped_model(tiny_arith_model_dir):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from botgrpo_tasks import get_task

    task = get_task("arith_synth", seed=0)
    t = AutoTokenizer.from_pretrained(tiny_arith_model_dir)
    m = AutoModelForCausalLM.from_pretrained(tiny_arith_model_dir).eval()
    prompts = [task.format_prompt(ex, t) for ex in task.train_examples()[:4]]
    p = SamplingParams(max_new_tokens=task.max_new_tokens, temperature=0.0, stop=tuple(task.stop))
    same_batches(HFEngine(m, t).generate(prompts, 2, p), FastEngine(m, t).generate(prompts, 2, p))


def test_sampling_is_reproducible_by_seed_and_rows_do_not_depend_on_batch(tok):
    fast = FastEngine(model("qwen3", tok), tok)
    p = SamplingParams(max_new_tokens=16, temperature=1.3, top_p=0.9, seed=11, stop=("e",))
    a, b = fast.generate(PROMPTS, 4, p), fast.generate(PROMPTS, 4, p)
    same_batches(a, b)
    assert a.texts != fast.generate(PROMPTS, 4, SamplingParams(**{**p.__dict__, "seed": 12})).texts
    assert len(set(a.texts[:4])) > 1  # a group's rows differ from each other
    # Rows leave the batch as they end; each row's draws are its own, so a row's tokens do not depend
    # on which other rows ended: without the stop string every row continues the same way.
    longer = fast.generate(PROMPTS, 4, SamplingParams(**{**p.__dict__, "stop": ()}))
    assert any(a.finished) and not all(a.finished)
    for i in range(len(a.texts)):
        n = int(a.mask[i].sum())
        assert a.completion_ids[i, :n].tolist() == longer.completion_ids[i, :n].tolist()


def test_pick_follows_the_distribution_and_top_p():
    logits = torch.log(torch.tensor([[0.5, 0.3, 0.15, 0.05]]))
    u = (torch.arange(1000) + 0.5) / 1000  # a uniform grid: inverse-CDF frequencies are the probabilities
    full = pick(logits.expand(1000, 4), u, SamplingParams(temperature=1.0))
    assert torch.bincount(full, minlength=4).tolist() == [500, 300, 150, 50]
    nucleus = pick(logits.expand(1000, 4), u, SamplingParams(temperature=1.0, top_p=0.7))  # keeps {0, 1}
    assert torch.bincount(nucleus, minlength=4).tolist() == [625, 375, 0, 0]
    assert pick(logits, torch.tensor([0.99]), SamplingParams(temperature=0.0)).tolist() == [0]


def test_unsupported_models_fall_back_to_hf_generate_and_say_why_once(tok, capsys):
    m = model("gpt2", tok)
    assert "gpt2" in unsupported_reason(m)
    fast = FastEngine(m, tok)
    p = SamplingParams(max_new_tokens=8, temperature=0.0)
    same_batches(HFEngine(m, tok).generate(PROMPTS, 2, p), fast.generate(PROMPTS, 2, p))
    fast.generate(PROMPTS, 1, p)
    assert capsys.readouterr().err.count("lean decode loop unavailable") == 1


def test_greedy_equals_hf_generate_under_bf16_autocast(tok):
    from botgrpo_cli.models.precision import autocast

    m = model("llama", tok)
    p = SamplingParams(max_new_tokens=16, temperature=0.0)
    with autocast(True):
        same_batches(HFEngine(m, tok).generate(PROMPTS, 2, p), FastEngine(m, tok).generate(PROMPTS, 2, p))


def test_frozen_weights_are_cast_once_per_call_with_the_same_result(tok):
    """Under bf16 autocast a frozen model (an evaluation model, LoRA's base layers) decodes with its
    linear weights cast once per call: the rows equal those of the same weights requiring grad
    (which autocast itself casts once), and the weights are float32 again afterwards."""
    p = SamplingParams(max_new_tokens=12, temperature=1.0, seed=4)
    trainable, frozen = model("qwen3", tok), model("qwen3", tok)
    frozen.requires_grad_(False)
    before = {n: t.clone() for n, t in frozen.state_dict().items()}
    seen = []  # the weight dtype a frozen projection computes with during the call
    frozen.model.layers[0].self_attn.q_proj.register_forward_hook(lambda m, i, o: seen.append(m.weight.dtype))
    with autocast(True):
        a = FastEngine(trainable, tok).generate(PROMPTS, 2, p)
        b = FastEngine(frozen, tok).generate(PROMPTS, 2, p)
    assert torch.equal(a.completion_ids, b.completion_ids) and a.texts == b.texts
    assert seen and set(seen) == {torch.bfloat16}
    after = frozen.state_dict()
    assert all(after[n].dtype == torch.float32 and torch.equal(after[n], t) for n, t in before.items())


@pytest.mark.parametrize("kind", ["qwen2", "llama"])
def test_kept_cache_continuations_equal_fresh_prefills(kind, monkeypatch):
    """A multi-turn continuation (a row of the last call, its tokens, then new ones) prefilled from
    the kept cache gives the same tokens as prefilling it whole, and a prompt no kept row starts runs whole."""
    from botgrpo_cli.rollout.fast import FastEngine

    tok = tokenizer()
    engine = FastEngine(model(kind, tok, seed=3), tok)
    skipped = []  # the first prefilled column of each call that had kept rows
    reuse = FastEngine._reuse_kept
    monkeypatch.setattr(FastEngine, "_reuse_kept", lambda self, *a: skipped.append(reuse(self, *a)) or skipped[-1])
    greedy = SamplingParams(max_new_tokens=10, temperature=0.0)
    sampled = SamplingParams(max_new_tokens=10, temperature=1.0, seed=5)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        first = engine.generate(PROMPTS, 1, greedy)
        appended = tok(" and more words", add_special_tokens=False)["input_ids"]
        follow = [p + first.completion_ids[i, : int(first.mask[i].sum())].tolist() + appended
                  for i, p in enumerate(first.prompt_ids)]
        follow.append(tok("x = y", add_special_tokens=False)["input_ids"])  # continues nothing kept
        fresh = [engine.generate(follow, 1, p) for p in (greedy, sampled)]
        with engine.keeping_cache():
            assert engine.generate(PROMPTS, 1, greedy).texts == first.texts
            assert len(engine.kept.rows) == len(PROMPTS)
            reused = engine.generate(follow, 1, greedy)
        with engine.keeping_cache():
            engine.generate(PROMPTS, 1, greedy)
            reused_sampled = engine.generate(follow, 1, sampled)
    finally:
        torch.set_num_threads(threads)
    assert reused.texts == fresh[0].texts and torch.equal(reused.completion_ids, fresh[0].completion_ids)
    assert reused_sampled.texts == fresh[1].texts
    assert engine.kept is None  # nothing is kept outside a multi-turn rollout
    # a continuation's prefill runs its last generated token (never fed) and the appended ones
    width = max(len(p) for p in follow)
    starts = [width - len(f) + len(p) + int(first.mask[i].sum()) - 1 for i, (f, p) in
              enumerate(zip(follow, first.prompt_ids))] + [width - len(follow[-1])]
    assert skipped == [0, 0, 0, 0, min(starts), 0, min(starts)] and min(starts) > 0
