"""The training loop: generate, score, advantage, loss, step, log, save; stop cleanly on a signal."""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import torch

from botgrpo_cli.algos import ADVANTAGES, compute_advantages
from botgrpo_cli.algos.losses import mismatch_stats, mismatch_weights
from botgrpo_cli.algos.options import trainer_inputs
from botgrpo_cli.rollout.seeds import held_out_seed
from botgrpo_cli.config import AlgoConfig, Config
from botgrpo_cli.console import console
from botgrpo_cli.errors import Interrupted
from botgrpo_cli.evaluation.metrics import failed_scorings, success_defined, success_rate
from botgrpo_cli.evaluation.sampling import Scoring, held_out
from botgrpo_cli.reward_client.scored import to_token_rewards
from botgrpo_cli.rollout import Engine, RolloutBatch, SamplingParams
from botgrpo_cli.rollout.turns import MultiTurn
from botgrpo_cli.rundir import read_metrics
from botgrpo_cli.trainer import checkpoint
from botgrpo_cli.trainer.distributed import reduce_metrics
from botgrpo_cli.trainer import controls
from botgrpo_cli.trainer.checks import RunChecks, checked
from botgrpo_cli.trainer.gdpo import gdpo_scored
from botgrpo_cli.trainer.interrupt import Stopped, StopGuard, resume_hint
from botgrpo_cli.trainer.logprobs import batch_logps
from botgrpo_cli.trainer.policy import reference_policy
from botgrpo_cli.trainer.progress import StepReport
from botgrpo_cli.trainer.reports import MetricsLog, plot_curves, sample_rows, step_metrics
from botgrpo_cli.trainer.ahead import Ahead, InTurn, rollout_source, staleness
from botgrpo_cli.trainer.rollouts import isolate_failed, score_shaping, step_ends
from botgrpo_cli.trainer.samples import SamplesPage, shows_samples
from botgrpo_cli.trainer.session import Session, open_session
from botgrpo_cli.trainer.update import UpdateInputs, update, updates_per_batch


@dataclass
class TrainResult:
    run_dir: Path
    metrics: list[dict]  # every line of metrics.jsonl
    samples: Path
    curves: Path | None
    eval_before: dict | None = None
    eval_after: dict | None = None


def train(cfg: Config, resume: bool = False, eval_around: bool = False, pool=None,
          on_step: Callable[[int, dict[str, float]], None] | None = None) -> TrainResult:
    """Run (or resume) training; with eval_around, measure held-out success before and after.
    `pool`: a running RewardPool for the task's service to reuse (e.g. across a sweep); else one is started.
    `on_step(step, metrics)`: called right after each training step with its metrics (benchmarks time steps).
    SIGINT / SIGTERM save the last completed step and raise Interrupted (trainer/interrupt.py)."""
    eval_seed = held_out_seed(cfg.run.seed)
    checked(cfg.run.fail_on)  # a misspelt check fails before anything is loaded
    with open_session(cfg, resume, pool) as s, StopGuard() as guard:
        rng = [checkpoint.rng_state()]  # the random state the last completed step left (saved on a stop)
        try:
            return _train(s, guard, rng, eval_around, eval_seed, on_step)
        except Stopped as stop:
            raise Interrupted(f"{stop.name} after step {s.state.step}; {_save_on_stop(s, guard, stop, rng[0])}",
                              128 + stop.signum) from None
        finally:
            guard.holding = False


def _save_on_stop(s: Session, guard: StopGuard, stop: Stopped, rng: dict) -> str:
    """Save the last completed step (unless it is saved already) and say how to resume."""
    done = checkpoint.path_of(s.run_dir, s.state.step)
    if stop.forced or s.dist.world > 1 or not s.run_dir.is_dir() or checkpoint.latest(s.run_dir) == done:
        return resume_hint(s.run_dir)  # several processes would have to meet to save: the last checkpoint stands
    guard.hold("saving the checkpoint")
    checkpoint.set_rng_state(rng)  # as the step ended, not as the interrupted one left it
    s.save()
    return resume_hint(s.run_dir)


def _train(s: Session, guard: StopGuard, rng: list, eval_around: bool, eval_seed: int,
           on_step: Callable[[int, dict[str, float]], None] | None) -> TrainResult:
    cfg = s.cfg
    if eval_around:
        console.print(f"measuring success on {cfg.run.eval_prompts} held-out prompts before and after training")
    with s.precision():
        before = _held_out(s, eval_seed) if eval_around else None
    rng[0] = checkpoint.rng_state()
    first = s.state.step
    main = s.dist.main  # only rank 0 writes the run directory
    log = MetricsLog(s.run_dir, cfg.log.tensorboard, cfg.log.wandb, cfg.public_dict(), s.state.step) if main else None
    page = SamplesPage(s.run_dir / "samples.html", f"{cfg.run.task} / {cfg.algo.name}") if main else None
    checks = RunChecks(cfg.run.fail_on, s.policy, lambda: getattr(s.pool, "first_failure", None),
                       lambda: getattr(s.pool, "contract_error", None))
    source = rollout_source(s, s.state.step + 1, cfg.run.steps)
    try:
        metrics = _steps(s, guard, rng, eval_seed, on_step, log, page, checks, source)
    finally:
        source.close()
    if log:
        log.close()
    checks.at_end(s.policy)
    evaluated = {k: v for k, v in metrics.items() if k.startswith("eval/")}  # the last step's, same seed and model
    with s.precision():
        after = (evaluated or _held_out(s, eval_seed)) if eval_around else None
    s.dist.barrier()
    records = read_metrics(s.run_dir)
    title = f"{cfg.run.task} / {cfg.algo.name}"
    measured = [(step, figs) for step, figs in ((first, before), (s.state.step, after)) if figs]
    curves = plot_curves(records, s.run_dir / "curves.png", title, measured) if main else None
    return TrainResult(s.run_dir, records, s.run_dir / "samples.html", curves, before, after)


def _steps(s: Session, guard: StopGuard, rng: list, eval_seed: int,
           on_step: Callable[[int, dict[str, float]], None] | None, log: MetricsLog | None,
           page: SamplesPage | None, checks: RunChecks, source: InTurn | Ahead) -> dict[str, float]:
    """Steps after s.state.step through run.steps; the last one's metrics."""
    cfg, main, metrics = s.cfg, s.dist.main, {}
    with StepReport(cfg.run.steps, s.state.step, disable=not main, heartbeat_s=cfg.log.heartbeat_s) as report:
        for step in range(s.state.step + 1, cfg.run.steps + 1):
            def phase(what: str, step: int = step) -> None:
                report.phase(step, what)

            with s.precision():  # bf16 autocast where chosen; weights and optimizer stay fp32
                metrics = train_step(s, step, page, phase, lambda: guard.hold("this step's update has begun"), source)
                if on_step is not None:
                    on_step(step, metrics)
                if cfg.run.eval_every and step % cfg.run.eval_every == 0:
                    phase("evaluating on held-out prompts")
                    started = time.perf_counter()
                    with source.exclusive():  # the producer's engine, holding the current weights
                        metrics.update(_held_out(s, eval_seed))
                    metrics["time/eval_s"] = time.perf_counter() - started  # compare's wall clock adds it
            metrics = reduce_metrics(metrics, s.dist)
            controls.after_step(s, step, metrics)  # reference sync, adaptive entropy (TRL's)
            if log and (step % cfg.log.every == 0 or step == cfg.run.steps):
                log.write(step, metrics)
            report.step_done(step, metrics)
            checks.after_step(step, metrics)
            s.state.step, s.state.data_position = step, source.position  # prompts drawn through this step
            if (cfg.run.save_every and step % cfg.run.save_every == 0) or step == cfg.run.steps:
                phase("saving the checkpoint")
                s.save()
            rng[0] = checkpoint.rng_state()
            guard.release()  # a stop signalled during the update takes effect here, the step complete
    return metrics


def _held_out(s: Session, seed: int) -> dict[str, float]:
    scoring = Scoring(s.pool, s.service_options, s.task.success_metric, deadline_ms=s.cfg.reward.deadline_ms,
                      prompt_options=s.task.think_options, messages=s.task.messages)
    chunk = s.cfg.rollout.prompts_per_step * s.cfg.rollout.group_size  # prompts per engine call
    figures = held_out_success(s.turns or s.engine, s.tok, s.task, scoring, dataclasses.replace(s.params, seed=seed),
                               s.cfg.run.eval_prompts, chunk, s.cfg.run.system_prompt, s.template_kwargs,
                               s.cfg.run.chat_template)
    if s.turns is not None:
        s.turns.take_stats()  # the evaluation's turns and calls are not the next training step's
    return figures


def held_out_success(engine: Engine | MultiTurn, tok: Any, task: Any, scoring: Scoring, params: SamplingParams, n_prompts: int,
                     batch_size: int, system_prompt: str | None = None,
                     template_kwargs: dict | None = None, chat_template: str = "auto") -> dict[str, float]:
    """eval/success (and eval/score, the mean score) through the evaluation path (evaluation/sampling.py) with the run's engine, pool,
    prompt formatting and sampling settings, one completion per prompt; failed scorings count as failures."""
    problems = held_out(engine, tok, task, scoring, params, n_prompts, batch_size=batch_size,
                        system_prompt=system_prompt, template_kwargs=template_kwargs, chat_template=chat_template)
    samples = [smp for p in problems for smp in p.samples]
    scores = [smp.score for smp in samples if smp.score is not None]
    figures = {"eval/success": success_rate(problems), "eval/failed_scoring": float(failed_scorings(problems)),
               "eval/prompts": float(len(problems)),
               "eval/score": sum(scores) / len(scores) if scores else float("nan")}  # mean score of the scored ones
    if task.service is None and not success_defined(problems, task.success_metric):
        del figures["eval/success"]  # the user's reward has no success rule: n/a, not 0
    if isinstance(engine, MultiTurn) and samples:
        figures["eval/turns"] = sum(smp.turns for smp in samples) / len(samples)
    return figures


def _nothing(*_: Any) -> None:
    return None


def train_step(s: Session, step: int, page: SamplesPage | None, phase: Callable[[str], None] = _nothing,
               before_update: Callable[[], None] = _nothing, source: InTurn | Ahead | None = None
               ) -> dict[str, float]:
    """One step. `phase(what)` is told what it is doing (for the heartbeat); `before_update()` is
    called right before the weights and optimizer start to change (a stop must then wait).
    `source` hands over the step's rollouts (trainer/ahead.py); None: generated here and now."""
    cfg = controls.step_config(s)  # s.cfg, with the adaptive entropy coefficient of this step
    a = cfg.algo
    source = source or InTurn(s)
    t0 = time.perf_counter()
    phase("generating" if isinstance(source, InTurn) else "waiting for the rollout producer")
    ro = source.take(step)  # prompts -> G completions each; scoring already running
    b = ro.batch
    t_gen = time.perf_counter()
    phase("computing log-probs")
    stale = staleness(step, b.policy_version) > 0
    if stale:  # sampled by older weights: the ratio is against the sampling policy's log-probs
        logp_old, is_weights, mismatch = off_policy_behaviour(s, a, b)
    else:
        # One update per batch: with HF generate the policy that sampled is the one being updated, so
        # logp_old = logp.detach() (docs/algorithms.md §3) and no extra forward pass is needed. A separate
        # engine (vLLM) samples with its own numerics, and mini-batch steps move the policy away from the
        # one that sampled: the behaviour log-probs are then computed once, before the first update.
        behaviour_pass = b.logp_old is not None or updates_per_batch(cfg) > 1
        logp_old = None if not behaviour_pass else _trainer_logps(s, b)  # (B, T)
    logp_ref = None
    if cfg.algo.beta > 0:  # the initial policy: a frozen copy, or (LoRA) the policy with its adapters off
        with reference_policy(s.policy, s.ref) as ref:
            logp_ref = batch_logps(ref, b.prompt_ids, b.completion_ids, b.mask, s.engine.pad_id,
                                   cfg.rollout.temperature, cfg.optim.micro_batch_size)
    t_logp = time.perf_counter()
    phase("waiting for the reward service")
    scored = ro.wait()  # scores + spans; failed rows come back with ok = False
    t_rew = time.perf_counter()
    shaped = scored if a.reward_aggregation == "sum_then_normalize" else gdpo_scored(  # GDPO: each function's
        scored, getattr(s.pool, "part_weights", {}), b.group_ids)  # scores normalised in its group; metrics: raw
    # only the model's own tokens are trained: tool and environment tokens get no reward nor advantage
    tr = to_token_rewards(shaped, b.offsets, b.trained, cfg.reward.lambda_seq, cfg.reward.lambda_tok,
                          shaping=score_shaping(b.trained.sum(1), a, s.trained_limit),  # failed rows: masked, counted
                          span_noise=s.span_noise, noise_key=(cfg.run.seed, step, s.dist.rank))
    scores, mask, rho, r = tr.scores, tr.mask, tr.rho, tr.r  # (B,), (B, T), (B, T), (B, T)
    gids = isolate_failed(b.group_ids, scored.ok)  # (B,)
    adv = compute_advantages(a.advantage, token_rewards=r, scores=scores, mask=mask, group_ids=gids,
                             **estimator_options(a, b, rho, s.task.step_separator, cfg.reward.lambda_tok))  # (B, T)
    if a.mask_truncated:  # out of the loss, still in their groups' statistics (TRL's mask_truncated_completions)
        mask = mask & b.finished[:, None].to(mask.device)
    if not stale:
        is_weights, mismatch = engine_mismatch(a, b, logp_old)
    phase("updating")
    before_update()
    with source.updating():  # then the engine gets the new weights (now, or before the producer's next batch)
        upd = update(s.model, s.opt, s.sched, UpdateInputs(b.prompt_ids, b.completion_ids, mask, adv, logp_old,
                                                           logp_ref, b.group_ids, is_weights), cfg, s.engine.pad_id,
                     s.trained_limit, s.dist)
    t_end = time.perf_counter()
    times = {"step": t_end - t0, "generate": t_gen - t0, "logp": t_logp - t_gen, "reward": t_rew - t_logp,
             "update": t_end - t_rew}
    if page and shows_samples(step, cfg.log.samples_every, cfg.run.steps):
        page.add(step, sample_rows(ro, scored, r, adv, cfg.log.samples))
    counters = s.pool.stats
    metrics = step_metrics(ro, scored, scores, mask, r, adv, upd, times, s.task.success_metric,
                           restarts=counters.get("restarts", 0), counters=counters)
    metrics.update(ro.turn_stats)  # multi-turn: turns, tool calls and errors, masked (tool and environment) tokens
    metrics.update(mismatch)
    metrics.update(source.step_metrics(step, ro))
    return metrics


def _trainer_logps(s: Session, b: RolloutBatch) -> torch.Tensor:
    """The trainer's current policy's log-probs of the batch's tokens (B, T), no gradient."""
    return batch_logps(s.policy, b.prompt_ids, b.completion_ids, b.mask, s.engine.pad_id, s.cfg.rollout.temperature,
                       s.cfg.optim.micro_batch_size)


def off_policy_behaviour(s: Session, algo: AlgoConfig, b: RolloutBatch
                         ) -> tuple[torch.Tensor, torch.Tensor | None, dict[str, float]]:
    """logp_old, mismatch weights and figures for a batch older weights sampled (stale_inputs); the
    trainer's current log-probs are computed only where they are needed."""
    needs = torch.isnan(b.logp_old).any() or _mismatch_mode(algo).endswith("mask")
    return stale_inputs(algo, b.logp_old, _trainer_logps(s, b) if needs else None, b.trained)


def _mismatch_mode(algo: AlgoConfig) -> str:
    return "token_truncate" if algo.mismatch_is == "auto" else algo.mismatch_is


def stale_inputs(algo: AlgoConfig, behaviour: torch.Tensor, current: torch.Tensor | None, trained: torch.Tensor
                 ) -> tuple[torch.Tensor, torch.Tensor | None, dict[str, float]]:
    """For a stale batch: logp_old = the sampling policy's log-probs `behaviour` (B, T) (the engine's,
    or the sampling copy's at the batch's version), so the clipped ratio pi / pi_behaviour carries
    both the staleness and the engine's numerics, as TRL's async GRPO and prime-rl take it; no
    truncated weight on top (it would correct twice). algo.mismatch_is's mask modes zero the tokens
    whose current/behaviour ratio leaves the band (weights 0 or 1, prime-rl's masking), with the
    gap's figures. Tokens the engine did not choose (NaN: a forced close tag) take the trainer's
    `current` log-prob (needed then, and for the mask modes; else None)."""
    nan = torch.isnan(behaviour)
    if nan.any():
        behaviour = torch.where(nan, current, behaviour)
    mode = _mismatch_mode(algo)
    if not mode.endswith("mask"):
        return behaviour, None, {}
    kept = mismatch_weights(current, behaviour, trained, mode, algo.mismatch_is_max, algo.mismatch_is_min)
    weights = (kept > 0).to(behaviour.dtype)  # (B, T)
    return behaviour, weights, mismatch_stats(current, behaviour, trained, weights)


def engine_mismatch(algo: AlgoConfig, batch: RolloutBatch, logp_old: torch.Tensor | None
                    ) -> tuple[torch.Tensor | None, dict[str, float]]:
    """For rows an engine sampled with its own numerics (batch.logp_old: vLLM), the importance weights
    algo.mismatch_is asks for (None when off or when the trainer's forward sampled) and the gap's
    figures; the weights multiply the surrogate per token and leave advantages alone."""
    if batch.logp_old is None or logp_old is None:
        return None, {}
    mode = _mismatch_mode(algo)
    # NaN: a token the engine did not choose (a close tag the thinking budget forced); the trainer's
    # own, as in the lean loop
    engine = torch.where(torch.isnan(batch.logp_old), logp_old, batch.logp_old)
    weights = None if mode == "off" else mismatch_weights(logp_old, engine, batch.trained, mode,
                                                           algo.mismatch_is_max, algo.mismatch_is_min)
    return weights, mismatch_stats(logp_old, engine, batch.trained, weights)


def estimator_options(algo: AlgoConfig, batch: RolloutBatch, rho: torch.Tensor, step_separator: str | None,
                      lambda_tok: float) -> dict:
    """The configured options, plus each tensor the estimator declares FromTrainer() (its annotations
    decide, never its name): step boundaries, process rewards."""
    computes = {"step_ends": lambda: step_ends(batch.texts, batch.offsets, step_separator, rho.shape[1]),
                "process_rewards": lambda: lambda_tok * rho}
    return trainer_inputs(algo.advantage, ADVANTAGES[algo.advantage], dict(algo.advantage_options or {}), computes)
