"""Micro-batching (gradient accumulation) gives the full batch's update, for every loss aggregation."""

from __future__ import annotations

import pytest
import torch
from transformers import Qwen2Config, Qwen2ForCausalLM

from botgrpo_cli.config import load_config
from botgrpo_cli.algos import masked_mean, policy_loss
from botgrpo_cli.trainer.logprobs import batch_logps, forward_logps
from botgrpo_cli.trainer.update import UpdateInputs, make_optimizer, update
from adamw_steps import assert_same_steps


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
        cfg = load_config(None, algo=algo, sets=[f"optim.micro_batch_size={mb}", "optim.grad_clip=0",
                                                          "optim.lr=1e-3"])
        opt, sched = make_optimizer(model, cfg)
        metrics = update(model, opt, sched, _inputs(model), cfg, pad_id=0, max_len=7)
        grads.append((torch.cat([p.detach().flatten() for p in model.parameters()]), metrics))
    (full, m_full), *rest = grads
    start = {"params": _params(_model())}
    for params, m in rest:  # the weights as AdamW allows other summation orders (adamw_steps.py)
        assert_same_steps({"params": full}, {"params": params}, start, lr=1e-3, betas=(0.9, 0.99), updates=1,
                          share=1e-2, where=f"{algo}, micro-batches")
        assert m["loss"] == pytest.approx(m_full["loss"], rel=1e-4, abs=1e-6)
        assert m["grad_norm"] == pytest.approx(m_full["grad_norm"], rel=1e-4)
    assert m_full["grad_norm"] > 0


GROUPS = torch.tensor([0, 0, 0, 1, 1, 1])  # two prompts with three completions each, as a rollout batch holds them


def _params(model) -> torch.Tensor:
    return torch.cat([p.detach().flatten() for p in model.parameters()])


def test_one_update_per_batch_is_the_plain_on_policy_step_bit_for_bit():
    """M = E = 1 without logp_old: ratio exp(logp - logp.detach()) = 1, one AdamW step over the whole
    batch, exactly as the trainer did before mini-batches existed (and with no extra log-prob pass)."""
    inp = _inputs(_model())
    inp = UpdateInputs(inp.prompt_ids, inp.completion_ids, inp.mask, inp.advantages, None, None, GROUPS)
    cfg = load_config(None, algo="grpo", sets=["optim.micro_batch_size=16", "optim.lr=1e-2"])
    model = _model()
    opt, sched = make_optimizer(model, cfg)
    metrics = update(model, opt, sched, inp, cfg, pad_id=0, max_len=7)

    ref = _model()
    ref_opt, _ = make_optimizer(ref, cfg)
    logp, _ = forward_logps(ref, inp.prompt_ids, inp.completion_ids, 0, 1.0)
    loss, _ = policy_loss("clip", logp=logp, logp_old=logp.detach(), advantages=inp.advantages, mask=inp.mask,
                          loss_agg="seq_mean_token_mean", eps_low=0.2, eps_high=0.2, max_completion_length=7)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(list(ref.parameters()), 1.0)
    ref_opt.step()
    assert metrics["update/steps"] == 1 and metrics["clip_frac"] == 0 and metrics["ratio_max"] == 1.0
    assert torch.equal(_params(model), _params(ref))
    assert not torch.equal(_params(model), _params(_model()))


def _plain_clipped_steps(model, inp: UpdateInputs, steps: list[list[int]], lr: float, eps: float) -> None:
    """The clipped objective written out: per step, -min(r A, clip(r, 1-eps, 1+eps) A) averaged over each
    completion's tokens then over the step's completions; one AdamW step on it."""
    opt = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.99), weight_decay=0.0)
    for rows in steps:
        opt.zero_grad()
        logp, _ = forward_logps(model, [inp.prompt_ids[i] for i in rows], inp.completion_ids[rows], 0, 1.0)
        m, adv = inp.mask[rows].float(), inp.advantages[rows]
        ratio = torch.exp(logp - inp.logp_old[rows])
        per_token = -torch.minimum(ratio * adv, ratio.clamp(1 - eps, 1 + eps) * adv)
        ((per_token * m).sum(1) / m.sum(1)).mean().backward()
        opt.step()


def test_mini_batches_and_epochs_equal_the_plain_clipped_objective():
    """M = 2 whole groups x E = 2 epochs against the behaviour log-probs of the sampling policy: the first
    step is on-policy (nothing clipped), the later ones are off-policy and clip; the parameters match a
    plain implementation that is micro-batch free."""
    lr = 3e-2
    model = _model()
    inp = _inputs(model)
    old = batch_logps(model, inp.prompt_ids, inp.completion_ids, inp.mask, 0, 1.0, 16)  # the sampler's own
    inp = UpdateInputs(inp.prompt_ids, inp.completion_ids, inp.mask, inp.advantages, old, None, GROUPS)
    cfg = load_config(None, algo="grpo", sets=["algo.mini_batches=2", "algo.epochs=2", f"optim.lr={lr}",
                                              "optim.micro_batch_size=2", "optim.grad_clip=0"])
    opt, sched = make_optimizer(model, cfg)
    metrics = update(model, opt, sched, inp, cfg, pad_id=0, max_len=7)
    assert metrics["update/steps"] == 4
    assert metrics["clip_frac/mb1"] == 0 and metrics["ratio_max/mb1"] == pytest.approx(1.0, abs=1e-5)
    assert max(metrics[f"clip_frac/mb{k}"] for k in (2, 3, 4)) > 0.1
    assert metrics["clip_frac"] == pytest.approx(sum(metrics[f"clip_frac/mb{k}"] for k in (1, 2, 3, 4)) / 4)

    ref = _model()
    _plain_clipped_steps(ref, inp, [[0, 1, 2], [3, 4, 5]] * 2, lr, 0.2)
    assert_same_steps({"params": _params(ref)}, {"params": _params(model)}, {"params": _params(_model())}, lr=lr,
                      betas=(0.9, 0.99), updates=4, share=1e-2, where="mini-batches x epochs")


def test_row_mini_batches_take_strided_rows_and_clip_off_policy():
    """split=rows: mini-batch k holds rows k, k+M, ...; GSPO's 4e-4 range clips from the second step on,
    and the KL to the initial policy is logged per step."""
    lr = 1e-2
    model = _model()
    inp = _inputs(model)
    old = batch_logps(model, inp.prompt_ids, inp.completion_ids, inp.mask, 0, 1.0, 16)
    inp = UpdateInputs(inp.prompt_ids, inp.completion_ids, inp.mask, inp.advantages, old, None, GROUPS)
    inp = UpdateInputs(inp.prompt_ids, inp.completion_ids, inp.mask, inp.advantages, old, old.clone(), GROUPS)
    cfg = load_config(None, algo="gspo", sets=["algo.mini_batches=2", "algo.mini_batch_split=rows", f"optim.lr={lr}",
                                              "optim.grad_clip=0", "algo.beta=0.1"])
    opt, sched = make_optimizer(model, cfg)
    metrics = update(model, opt, sched, inp, cfg, pad_id=0, max_len=7)
    assert metrics["update/steps"] == 2 and metrics["clip_frac/mb1"] == 0 and metrics["clip_frac/mb2"] > 0
    # the reference is the sampling policy here: no KL before the first step, some after it
    assert metrics["kl/mb1"] == pytest.approx(0.0, abs=1e-6) and metrics["kl/mb2"] > 1e-6


def test_several_updates_without_behaviour_logps_are_refused():
    inp = _inputs(_model())
    inp = UpdateInputs(inp.prompt_ids, inp.completion_ids, inp.mask, inp.advantages, None, None, GROUPS)
    cfg = load_config(None, algo="grpo", sets=["algo.mini_batches=2", "optim.lr=1e-3"])
    model = _model()
    opt, sched = make_optimizer(model, cfg)
    with pytest.raises(ValueError, match="logp_old"):
        update(model, opt, sched, inp, cfg, pad_id=0, max_len=7)


def test_entropy_bonus_reaches_the_parameters():
    """With zero advantages only the bonus has a gradient: the step must move the weights and raise entropy."""
    inp = _inputs(_model())
    inp = UpdateInputs(inp.prompt_ids, inp.completion_ids, inp.mask, torch.zeros_like(inp.advantages), None, None)
    entropies = []
    for coef in (0.0, 1.0):
        model = _model()
        cfg = load_config(None, algo="grpo", sets=[f"algo.entropy_coef={coef}", "optim.lr=1e-2"])
        opt, sched = make_optimizer(model, cfg)
        before = update(model, opt, sched, inp, cfg, pad_id=0, max_len=7)["entropy"]
        after = update(model, opt, sched, inp, cfg, pad_id=0, max_len=7)["entropy"]
        entropies.append(after - before)
        moved = not torch.equal(_params(model), _params(_model()))
        assert moved == (coef > 0)
    assert entropies[0] == 0 and entropies[1] > 0


@pytest.mark.parametrize("epochs", [1, 2])
def test_dapo_is_trls_each_step_divided_by_the_batch_tokens_over_the_steps(epochs):
    """TRL's loss_type="dapo" with two optimizer steps per pass over the generation batch: each step's
    token-loss sum is divided by half the batch's valid tokens (not by its own, as token_mean does),
    in every epoch (the steps of one pass, not of all passes)."""
    inp = _inputs(_model())
    inp = UpdateInputs(inp.prompt_ids, inp.completion_ids, inp.mask, inp.advantages, inp.logp_old, None, GROUPS)
    sets = ["algo.mini_batches=2", f"algo.epochs={epochs}", "optim.micro_batch_size=2", "optim.grad_clip=0",
            "optim.lr=1e-2"]
    after = {}
    for agg in ("dapo", "token_mean"):
        model = _model()
        cfg = load_config(None, algo="grpo", sets=[*sets, f"algo.loss_agg={agg}"])
        opt, sched = make_optimizer(model, cfg)
        assert update(model, opt, sched, inp, cfg, pad_id=0, max_len=7)["update/steps"] == 2 * epochs
        after[agg] = _params(model)

    ref = _model()
    ref_opt, _ = make_optimizer(ref, cfg)
    per_step = float(inp.mask.sum()) / 2  # the groups hold 14 and 11 valid tokens
    for rows in (slice(0, 3), slice(3, 6)) * epochs:  # one group per mini-batch, in order
        ref_opt.zero_grad()
        logp, _ = forward_logps(ref, inp.prompt_ids[rows], inp.completion_ids[rows], 0, 1.0)
        mask = inp.mask[rows]
        mean, _ = policy_loss("clip", logp=logp, logp_old=inp.logp_old[rows], advantages=inp.advantages[rows],
                              mask=mask, loss_agg="token_mean", eps_low=0.2, eps_high=0.2)
        (mean * float(mask.sum()) / per_step).backward()  # the step's token sum over half the batch's tokens
        ref_opt.step()
    # AdamW moves each weight ~2e-2 here; micro-batching's summation order leaves ~5e-6, token_mean ~1e-3
    torch.testing.assert_close(after["dapo"], _params(ref), rtol=0, atol=5e-5)
    assert float((after["dapo"] - after["token_mean"]).abs().max()) > 5e-4


@pytest.mark.parametrize("algo", ["grpo", "gspo"])
def test_trained_tokens_with_holes_train_only_themselves(algo):
    """A multi-turn row trains its model turns only: tool tokens between them are a hole in the mask.
    The update equals the objective over the trained tokens through each row's last one (a width
    counted from the mask's sum would cut the last turn), and an advantage on a hole changes nothing."""
    inp = _inputs(_model())
    holes = torch.zeros_like(inp.mask)
    holes[:, 1:3] = True  # columns 1-2: a tool's answer inside each row that reaches past it
    trained = inp.mask & ~holes
    cfg = load_config(None, algo=algo, sets=["optim.micro_batch_size=16", "optim.grad_clip=0", "optim.lr=1e-2",
                                                 "algo.mini_batches=1"])

    def stepped(advantages: torch.Tensor) -> tuple[torch.Tensor, dict]:
        model = _model()
        opt, sched = make_optimizer(model, cfg)
        metrics = update(model, opt, sched, UpdateInputs(inp.prompt_ids, inp.completion_ids, trained, advantages,
                                                         inp.logp_old, None, GROUPS), cfg, pad_id=0, max_len=7)
        return _params(model), metrics

    params, metrics = stepped(inp.advantages * trained)
    other, _ = stepped(inp.advantages * trained + 5.0 * holes)
    assert torch.equal(params, other)
    ref = _model()
    logp, _ = forward_logps(ref, inp.prompt_ids, inp.completion_ids, 0, 1.0)
    a = cfg.algo
    loss, _ = policy_loss(a.loss, logp=logp, logp_old=inp.logp_old, advantages=inp.advantages * trained,
                          mask=trained, loss_agg=a.loss_agg, max_completion_length=7, **a.loss_options)
    assert metrics["loss"] == pytest.approx(float(loss.detach()), rel=1e-4, abs=1e-6)


def test_a_step_whose_loss_is_not_finite_changes_no_weight_and_is_never_saved(tmp_path):
    from botgrpo_cli.errors import UserError
    from botgrpo_cli.trainer import checkpoint

    model = _model()
    cfg = load_config(None, algo="grpo", sets=["optim.lr=1e-3"])
    opt, sched = make_optimizer(model, cfg)
    before = _params(model)
    inputs = _inputs(model)
    inputs.advantages[0, 0] = float("nan")  # one NaN advantage: a NaN loss and NaN gradients
    metrics = update(model, opt, sched, inputs, cfg, pad_id=0, max_len=7)
    assert metrics["update/nonfinite_skipped"] == 1.0 and not torch.isfinite(torch.tensor(metrics["grad_norm"]))
    assert torch.equal(_params(model), before) and not opt.state  # no weight, no moment touched
    metrics = update(model, opt, sched, _inputs(model), cfg, pad_id=0, max_len=7)  # the next finite step trains
    assert metrics["update/nonfinite_skipped"] == 0.0 and not torch.equal(_params(model), before)
    with torch.no_grad():
        next(model.parameters())[0, 0] = float("inf")  # however a weight got there, it is never written
    state = checkpoint.TrainState(step=3, data_position=0)
    with pytest.raises(UserError, match="not writing checkpoint .*step-000003: NaN or infinite values in 1 tensors"):
        checkpoint.save(tmp_path, state, model, None, opt, sched, "", keep_last=2)
    assert not (tmp_path / "checkpoints").exists()


def test_off_policy_mask_reaches_the_update():
    """Negative advantages on completions the behaviour policy liked more (mean KL 0.1 nat > 0.05): the
    off-policy mask drops every token, so the step leaves the weights alone; without it they move."""
    inp = _inputs(_model())
    old = batch_logps(_model(), inp.prompt_ids, inp.completion_ids, inp.mask, 0, 1.0, 16) + 0.1  # ratio 0.9: unclipped
    inp = UpdateInputs(inp.prompt_ids, inp.completion_ids, inp.mask, -inp.mask.float(), old, None)
    for threshold, moves in ((None, True), (0.05, False)):
        model = _model()
        sets = ["optim.lr=1e-2"] + ([] if threshold is None else [f"algo.off_policy_mask={threshold}"])
        cfg = load_config(None, algo="grpo", sets=sets)
        opt, sched = make_optimizer(model, cfg)
        metrics = update(model, opt, sched, inp, cfg, pad_id=0, max_len=7)
        assert (not torch.equal(_params(model), _params(_model()))) == moves
        assert metrics.get("kept/off_policy", 1.0) == (1.0 if moves else 0.0)


def test_mismatch_weights_scale_the_loss_and_gradient_of_their_own_rows_in_each_mini_batch():
    """Hand-made engine/trainer importance weights, different on every row and token (0 on a whole row):
    over M = 2 mini-batches of micro-batches of 2 rows, the update with them is the update whose
    advantages carry them instead (w >= 0: w * -min(r A, clip(r) A) = -min(r wA, clip(r) wA)), step for
    step; without them it is another update. Weights dropped on the way to the loss, or paired with
    another mini-batch's rows, fail here. SGD at lr 1: the weights move by the gradients themselves."""
    inp = _inputs(_model())
    t = torch.arange(inp.mask.shape[1])
    w = torch.tensor([0.5, 1.5, 0.0, 2.0, 0.25, 1.0])[:, None] * (1.0 + 0.1 * t) * inp.mask
    cfg = load_config(None, algo="grpo", sets=["algo.mini_batches=2", "optim.micro_batch_size=2", "optim.grad_clip=0",
                                              "optim.lr=1"])

    def stepped(advantages: torch.Tensor, is_weights: torch.Tensor | None) -> tuple[torch.Tensor, dict]:
        model = _model()
        opt = torch.optim.SGD(model.parameters(), lr=1.0)
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0)
        metrics = update(model, opt, sched, UpdateInputs(inp.prompt_ids, inp.completion_ids, inp.mask, advantages,
                                                         inp.logp_old, None, GROUPS, is_weights), cfg, 0, 7)
        return _params(model), metrics

    weighted, m_weighted = stepped(inp.advantages, w)
    carried, m_carried = stepped(inp.advantages * w, None)
    plain, _ = stepped(inp.advantages, None)
    assert m_weighted["update/steps"] == 2
    start = _params(_model())
    torch.testing.assert_close(weighted - start, carried - start, rtol=1e-4, atol=1e-7)
    assert m_weighted["loss"] == pytest.approx(m_carried["loss"], rel=1e-5, abs=1e-8)
    assert float((weighted - plain).abs().max()) > 1e-2 * float((plain - start).abs().max())


def test_the_configured_clip_range_reaches_the_loss():
    """algo.loss_options (the presets' eps_low / eps_high, or the user's) reach policy_loss: with a
    range narrower than the loss's defaults, the update's loss and clip fraction are the hand-made
    loss's with that range, and differ from the defaults'."""
    inp = _inputs(_model())  # logp_old 0.05-nats noise off the policy: ratios beyond 1 +- 0.02, within 1 +- 0.2
    cfg = load_config(None, algo="grpo", sets=["optim.micro_batch_size=16", "optim.lr=1e-3",
                                              "algo.loss_options={eps_low: 0.02, eps_high: 0.03}"])
    model = _model()
    opt, sched = make_optimizer(model, cfg)
    metrics = update(model, opt, sched, inp, cfg, pad_id=0, max_len=7)
    logp, _ = forward_logps(_model(), inp.prompt_ids, inp.completion_ids, 0, 1.0)
    by_hand = {}
    for name, eps in {"narrow": {"eps_low": 0.02, "eps_high": 0.03}, "default": {}}.items():
        loss, m = policy_loss("clip", logp=logp, logp_old=inp.logp_old, advantages=inp.advantages, mask=inp.mask,
                              loss_agg="seq_mean_token_mean", **eps)
        by_hand[name] = (float(loss.detach()), m["clip_frac"])
    assert by_hand["narrow"][1] > 0.1 and by_hand["default"][1] == 0
    assert metrics["clip_frac"] == pytest.approx(by_hand["narrow"][1])
    assert metrics["loss"] == pytest.approx(by_hand["narrow"][0], rel=1e-4, abs=1e-7)


def test_the_update_scores_tokens_at_the_sampling_temperature():
    """The update's log-probs are the sampling distribution's, logits / rollout.temperature: its loss,
    ratios and entropy are the hand-made ones at that temperature (at 1.0 they would differ)."""
    inp = _inputs(_model())
    cfg = load_config(None, algo="grpo", sets=["optim.micro_batch_size=16", "optim.lr=1e-3",
                                              "rollout.temperature=0.5"])
    model = _model()
    opt, sched = make_optimizer(model, cfg)
    metrics = update(model, opt, sched, inp, cfg, pad_id=0, max_len=7)
    figures = {}
    for t in (0.5, 1.0):
        logp, entropy = forward_logps(_model(), inp.prompt_ids, inp.completion_ids, 0, t, with_entropy=True)
        loss, m = policy_loss("clip", logp=logp, logp_old=inp.logp_old, advantages=inp.advantages, mask=inp.mask,
                              loss_agg="seq_mean_token_mean")
        figures[t] = (float(loss.detach()), m["ratio_mean"], float(masked_mean(entropy, inp.mask)))
    assert metrics["loss"] == pytest.approx(figures[0.5][0], rel=1e-4, abs=1e-7)
    assert metrics["ratio_mean"] == pytest.approx(figures[0.5][1], rel=1e-5)
    assert metrics["entropy"] == pytest.approx(figures[0.5][2], rel=1e-4)
    assert abs(figures[1.0][1] - figures[0.5][1]) > 1e-2 and abs(figures[1.0][2] - figures[0.5][2]) > 1e-3
