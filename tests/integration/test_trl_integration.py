"""BoTGRPOTrainer on TRL: two real training steps of the tiny arith model scored by the math service."""

from __future__ import annotations

import importlib.util
import math
from types import SimpleNamespace

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from botgrpo_cli.algos import compute_advantages, project_spans, token_rewards
from botgrpo_tasks import get_task

# TRL (and the vLLM it imports) load in the `api` fixture, not at collection: the test processes that
# do not run this file do not pay for them.
pytestmark = pytest.mark.skipif(importlib.util.find_spec("trl") is None, reason="trl is not installed")

GROUP = 4


@pytest.fixture(scope="module")
def api():
    """TRL's config, our trainer and reward function, datasets' Dataset, and RecordingTrainer."""
    from datasets import Dataset
    from trl import GRPOConfig

    from botgrpo_cli.integrations.trl import BoTGRPOTrainer, reward_function

    class RecordingTrainer(BoTGRPOTrainer):
        """Keeps what each generation produced (before TRL shuffles it) and what the loss received."""

        def __init__(self, *args, **kwargs):
            self.generated: list[dict] = []
            self.loss_inputs: list[dict] = []
            super().__init__(*args, **kwargs)

        def _generate_and_score_completions(self, inputs):
            out = super()._generate_and_score_completions(inputs)
            self.generated.append({"out": {k: v.clone() for k, v in out.items() if torch.is_tensor(v)},
                                   "scored": self.token_reward.reward.last,
                                   "offsets": list(self.token_reward.offsets)})
            return out

        def _compute_loss(self, model, inputs):
            self.loss_inputs.append({k: v.detach().clone() for k, v in inputs.items() if torch.is_tensor(v)})
            return super()._compute_loss(model, inputs)

    return SimpleNamespace(Dataset=Dataset, GRPOConfig=GRPOConfig, BoTGRPOTrainer=BoTGRPOTrainer,
                           reward_function=reward_function, RecordingTrainer=RecordingTrainer)


def _offsets(tokenizer, ids: list[int]) -> tuple[str, list[tuple[int, int]]]:
    """Code-point offsets by decoding one token at a time (the completions here are ASCII)."""
    pieces = [tokenizer.decode([i], skip_special_tokens=True) for i in ids]
    ends = [sum(len(p) for p in pieces[: k + 1]) for k in range(len(pieces))]
    return "".join(pieces), [(e - len(p), e) for p, e in zip(pieces, ends)]


def _expected(tokenizer, generated: dict) -> torch.Tensor:
    """compute_advantages("bot_grpo") on the scored rewards, rebuilt from the generated ids."""
    out, scored = generated["out"], generated["scored"]
    mask = out["completion_mask"].bool()
    offsets = []
    for row, m, text in zip(out["completion_ids"], mask, scored.texts):
        decoded, offs = _offsets(tokenizer, row[m].tolist())
        assert decoded == text  # the service scored exactly the generated tokens' text
        offsets.append(offs)
    ok = torch.tensor([s is not None for s in scored.values])
    scores = torch.tensor([s or 0.0 for s in scored.values])
    mask = mask & ok[:, None]
    rho = project_spans(scored.spans, offsets, mask.shape[1])
    r = token_rewards(scores, rho, mask)
    rows = torch.arange(len(scores))
    groups = torch.where(ok, rows // GROUP, len(scores) + rows)
    return compute_advantages("bot_grpo", token_rewards=r, scores=scores, mask=mask, group_ids=groups)


def test_bot_grpo_trainer_feeds_token_advantages_to_trl_loss(api, tiny_arith_model_dir, tmp_path):
    task = get_task("arith_synth")
    examples = task.train_examples()[:4]
    dataset = api.Dataset.from_list([{"prompt": task.format_prompt(ex), "answer": ex.reference["answer"]}
                                     for ex in examples])
    tokenizer = AutoTokenizer.from_pretrained(tiny_arith_model_dir)
    model = AutoModelForCausalLM.from_pretrained(tiny_arith_model_dir)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    args = api.GRPOConfig(output_dir=str(tmp_path), per_device_train_batch_size=2 * GROUP, num_generations=GROUP,
                          max_completion_length=48, max_steps=2, learning_rate=1e-3, beta=0.0, use_cpu=True,
                          bf16=False, report_to="none", save_strategy="no", logging_steps=1, seed=0,
                          dataloader_num_workers=0)
    reward = api.reward_function("math", options=task.service_options)
    try:
        trainer = api.RecordingTrainer(model, reward_funcs=reward, args=args, train_dataset=dataset,
                                       processing_class=tokenizer)
        trainer.train()
    finally:
        reward.close()

    assert len(trainer.generated) == 2 and len(trainer.loss_inputs) == 2
    spans_seen = 0
    for generated, received in zip(trainer.generated, trainer.loss_inputs):
        expected = _expected(tokenizer, generated)
        out = generated["out"]
        assert torch.allclose(out["advantages"], expected, atol=1e-6)
        # TRL shuffles rows before the loss: match them back by their token ids.
        by_ids = {(tuple(p.tolist()), tuple(c.tolist())): a for p, c, a in
                  zip(out["prompt_ids"], out["completion_ids"], expected)}
        assert received["advantages"].shape == received["completion_ids"].shape  # (B, T), not (B,)
        for p, c, a in zip(received["prompt_ids"], received["completion_ids"], received["advantages"]):
            assert torch.allclose(a, by_ids[(tuple(p.tolist()), tuple(c.tolist()))], atol=1e-6)
        assert expected.abs().sum() > 0
        spans_seen += sum(len(s) for s in generated["scored"].spans)
    # Step spans make advantages vary inside a completion: the token-level signal reached the loss.
    assert spans_seen > 0
    rows = torch.cat([g["out"]["advantages"] for g in trainer.generated])
    masks = torch.cat([g["out"]["completion_mask"] for g in trainer.generated]).bool()
    assert any(len(set(a[m].tolist())) > 1 for a, m in zip(rows, masks))
    changed = [n for n, p in model.named_parameters() if not torch.equal(p.detach(), before[n])]
    assert changed
    losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    assert losses and all(math.isfinite(x) for x in losses)


def test_reward_function_returns_none_for_unscorable(api, tmp_path):
    """The plain TRL reward function: sequence scores, None where the service answers with an error."""
    reward = api.reward_function("math", reference_columns=["answer"])
    try:
        scores = reward(prompts=["1+1?", "2+2?"], completions=["\\boxed{2}", "x" * 3_000_000],
                        answer=["2", "4"], trainer_state=None)
    finally:
        reward.close()
    assert scores[0] == pytest.approx(1.0)
    assert scores[1] is None


def first_digit(prompts, completions, **kwargs):
    """A span-returning TRL reward function: +1 / -1 on the first character as it is a digit or not."""
    out = []
    for c in completions:
        good = bool(c) and c[0].isdigit()
        out.append({"score": float(good), "spans": [{"start": 0, "end": 1, "reward": 1.0 if good else -1.0}]}
                   if c else None)
    return out


def shorter(completions, **kwargs):
    return [-len(c) / 100 for c in completions]


def test_bot_grpo_trainer_takes_span_returning_python_functions(api, tiny_arith_model_dir, tmp_path):
    task = get_task("arith_synth")
    dataset = api.Dataset.from_list([{"prompt": task.format_prompt(ex)} for ex in task.train_examples()[:2]])
    tokenizer = AutoTokenizer.from_pretrained(tiny_arith_model_dir)
    args = api.GRPOConfig(output_dir=str(tmp_path), per_device_train_batch_size=2 * GROUP, num_generations=GROUP,
                          max_completion_length=16, max_steps=1, learning_rate=1e-3, use_cpu=True, bf16=False,
                          report_to="none", save_strategy="no", seed=0, dataloader_num_workers=0,
                          reward_weights=[1.0, 0.5])
    trainer = api.RecordingTrainer(AutoModelForCausalLM.from_pretrained(tiny_arith_model_dir),
                                   reward_funcs=[first_digit, shorter], args=args, train_dataset=dataset,
                                   processing_class=tokenizer)
    try:
        trainer.train()
    finally:
        trainer.token_reward.reward.close()
    assert args.reward_weights == [1.0, 0.5] and trainer.args.reward_weights is None  # weighed once, by us
    scored = trainer.generated[0]["scored"]
    for text, value, spans in zip(scored.texts, scored.values, scored.spans):
        if text:
            assert value == pytest.approx(float(text[0].isdigit()) - 0.5 * len(text) / 100)
            assert len(spans) == 1 and spans[0][:2] == (0, 1)
    out = trainer.generated[0]["out"]
    masks = out["completion_mask"].bool()
    assert any(len(set(a[m].tolist())) > 1 for a, m in zip(out["advantages"], masks))  # the span's token credit


def digits(completions, **kwargs):
    """+1 on each digit, -1 on each other character: span rewards that vary inside a completion."""
    return [{"score": sum(ch.isdigit() for ch in c) / max(len(c), 1),
             "spans": [{"start": k, "end": k + 1, "reward": 1.0 if ch.isdigit() else -1.0} for k, ch in enumerate(c)]}
            for c in completions]


def test_pure_under_bot_grpo_trainer_gets_the_step_ends_its_signature_asks_for(api, tiny_arith_model_dir, tmp_path):
    """pure declares step_ends and process_rewards FromTrainer(): the adapter computes them from the
    decoded completions (here split at "=", so rows have several steps), as `botgrpo train` does."""
    from botgrpo_cli.algos import isolate_failed
    from botgrpo_cli.reward_client.scored import to_token_rewards
    from botgrpo_cli.trainer.rollouts import step_ends

    task = get_task("arith_synth")
    dataset = api.Dataset.from_list([{"prompt": task.format_prompt(ex)} for ex in task.train_examples()[:2]])
    args = api.GRPOConfig(output_dir=str(tmp_path), per_device_train_batch_size=2 * GROUP, num_generations=GROUP,
                          max_completion_length=16, max_steps=1, learning_rate=1e-3, use_cpu=True, bf16=False,
                          report_to="none", save_strategy="no", seed=0, dataloader_num_workers=0)
    trainer = api.RecordingTrainer(AutoModelForCausalLM.from_pretrained(tiny_arith_model_dir),
                                   reward_funcs=[digits], args=args, train_dataset=dataset,
                                   processing_class=AutoTokenizer.from_pretrained(tiny_arith_model_dir),
                                   advantage="pure", step_separator="=")
    try:
        trainer.train()
    finally:
        trainer.token_reward.reward.close()
    generated = trainer.generated[0]
    scored, out = generated["scored"], generated["out"]
    tr = to_token_rewards(scored, generated["offsets"], out["completion_mask"].bool())
    groups = isolate_failed(torch.arange(len(tr.scores)) // GROUP, tr.ok)
    ends = step_ends(scored.texts, generated["offsets"], "=", tr.mask.shape[1])
    assert (ends.sum(1) > 1).any()  # some completion has more than one step

    def pure(step_ends):
        return compute_advantages("pure", token_rewards=tr.r, scores=tr.scores, mask=tr.mask, group_ids=groups,
                                  step_ends=step_ends, process_rewards=tr.rho)
    assert torch.allclose(out["advantages"], pure(ends), atol=1e-6)
    assert not torch.allclose(out["advantages"], pure(None), atol=1e-6)  # the step ends changed the credit


def test_trainer_refuses_rewards_it_cannot_score(api):
    with pytest.raises(TypeError, match="reward_function.*or Python reward functions"):
        api.BoTGRPOTrainer("unused-model-id", reward_funcs=3)
    with pytest.raises(TypeError, match="reward_function.*or Python reward functions"):
        api.BoTGRPOTrainer("unused-model-id", reward_funcs=[shorter, api.reward_function("math")])
    with pytest.raises(KeyError, match="known"):
        api.BoTGRPOTrainer("unused-model-id", reward_funcs=api.reward_function("math"), advantage="nope")


def test_bot_grpo_trainer_loads_a_gguf_by_the_name_botgrpo_train_takes(api, smollm2_gguf, tmp_path):
    args = api.GRPOConfig(output_dir=str(tmp_path), num_generations=2, per_device_train_batch_size=2, max_steps=1,
                          use_cpu=True, bf16=False, report_to="none", save_strategy="no")
    trainer = api.BoTGRPOTrainer(str(smollm2_gguf), reward_funcs=[shorter], args=args,
                                 train_dataset=api.Dataset.from_list([{"prompt": "Name a colour."}] * 2))
    try:
        assert trainer.model.config.model_type == "llama" and trainer.processing_class.chat_template
    finally:
        trainer.token_reward.reward.close()
