"""The one evaluation path: sample n completions per problem with an engine, score them through
a RewardPool (the task's service, plus a render pass for React tasks: screenshots, render rate,
similarity to the reference) and return the results table (results.Problem / Sample, whose
`success` is the one success rule). `botgrpo eval`, the trainer's periodic evaluation, bootstrap's
base rate and `bench convergence` all call `evaluate` (or `held_out`).

Scoring requests are sent as soon as each generated chunk is ready, so the services work while
the model generates the next chunk.
"""

from __future__ import annotations

import dataclasses
import os
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from botgrpo_cli.algos.metrics import succeeded
from botgrpo_cli.evaluation.results import Problem, Sample
from botgrpo_cli.reward_client.scored import response_of, score_request
from botgrpo_cli.rollout import Engine, SamplingParams
from botgrpo_cli.rollout.turns import MultiTurn
from botgrpo_rewards.protocol import DEFAULT_DEADLINE_MS, ScoreRequest

@dataclass
class Scoring:
    """Where completions go: the task's pool and, for React tasks, a render pool (or None)."""

    pool: Any  # RewardPool of task.service
    options: dict  # the task's service options
    success_metric: str
    render_pool: Any = None  # the pool of the task's render_service; None = no render pass
    deadline_ms: int = DEFAULT_DEADLINE_MS
    save_root: Path | None = None  # the render service's save dir (its setting); shots lie below it
    renders_itself: bool = False  # the task's own service renders (render tasks): no second pass
    prompt_options: Callable[[str], dict] = lambda prompt: {}  # per formatted prompt (task.think_options)
    messages: Callable[[Any], list | None] = lambda example: None  # an example's chat prompt (task.messages)

    @classmethod
    def of_task(cls, task: Any, pool: Any, render_pool: Any = None, deadline_ms: int = DEFAULT_DEADLINE_MS,
                options: dict | None = None, save_root: Path | None = None) -> "Scoring":
        """The task's scoring through `pool`; `options` (merged over the task's service options)."""
        return cls(pool, {**task.service_options, **(options or {})}, task.success_metric, render_pool,
                   deadline_ms, save_root, renders_itself=task.service == task.render_service,
                   prompt_options=task.think_options, messages=task.messages)


@dataclass
class Pending:
    """A generated completion whose scoring is in flight."""

    problem: int
    text: str
    tokens: int
    finished: bool
    task: Future
    render: Future | None
    render_request: ScoreRequest | None
    render_note: str | None = None  # why the render pass fell back to no judge
    counts: dict[str, int] = dataclasses.field(default_factory=dict)  # multi-turn: turns, tool_calls, tool_errors, multi_turn


def _render_options(example: Any, save_group: dict) -> dict:
    judge = "similarity" if "reference_code" in example.reference else "none"  # similarity needs a reference
    return {"judge": judge, "mode": "single", **save_group}


def _save_group(shots: Path | None, root: Path | None) -> dict:
    """The request option that puts screenshots in `shots`, a folder under the render service's save
    dir (a request names a sub-folder, never a path)."""
    return {"save_group": shots.relative_to(root).as_posix()} if shots is not None and root is not None else {}


def submit_all(engine: Engine | MultiTurn, examples: list, prompts: list[str], n: int, params: SamplingParams,
               scoring: Scoring, shots: Path | None, batch_size: int,
               tick: Callable[[int], None] = lambda k: None) -> list[Pending]:
    """Generate chunk by chunk (chunk c uses seed params.seed + c) and send every completion to the
    services at once. `shots`: folder for screenshots (React tasks), or None."""
    rows: list[Pending] = []
    in_task = scoring.renders_itself
    group = _save_group(shots, scoring.save_root)
    for c, lo in enumerate(range(0, len(examples), batch_size)):
        chunk = examples[lo:lo + batch_size]
        chunk_params = dataclasses.replace(params, seed=params.seed + c)
        multi = isinstance(engine, MultiTurn)
        batch = (engine.generate(prompts[lo:lo + batch_size], n, chunk_params, rows=chunk) if multi
                 else engine.generate(prompts[lo:lo + batch_size], n, chunk_params))
        lengths = batch.trained.sum(1).tolist()  # the model's own tokens (a transcript's tool tokens are not)
        requests, shown_requests = [], []
        for i, text in enumerate(batch.texts):
            p = lo + i // n
            rid, ex = f"p{p:05d}-s{i % n:03d}", examples[p]
            think = scoring.prompt_options(prompts[p])  # the reasoning options of this prompt
            options = {**think, **scoring.options, **(group if in_task else {})}
            requests.append(score_request(rid, text, ex, options, scoring.deadline_ms))
            shown = None
            if scoring.render_pool is not None and not in_task:
                shown = score_request(rid, text, ex, {**think, **_render_options(ex, group)}, scoring.deadline_ms)
            shown_requests.append(shown)
        futures = _submit_chunk(scoring, requests, examples, lo, n, batch)  # transcripts, in rollouts.jsonl too
        for i, (future, shown) in enumerate(zip(futures, shown_requests)):
            by_environment = engine.scores.get(i) if multi else None  # an environment's own reward stands
            rows.append(Pending(lo + i // n, batch.texts[i], int(lengths[i]), bool(batch.finished[i]),
                                future if by_environment is None else _done(by_environment),
                                scoring.render_pool.submit(shown) if shown else None, shown,
                                counts={**engine.row_counts[i], "multi_turn": True} if multi else {}))
        tick(len(chunk))
    return rows


def _submit_chunk(scoring: Scoring, requests: list, examples: list, lo: int, n: int, batch: Any) -> list[Future]:
    """A chunk's requests to the task's pool: reward functions get them as one batch with TRL's
    keywords (as in training), a service one by one."""
    if not getattr(scoring.pool, "takes_batches", False):
        return [scoring.pool.submit(r) for r in requests]
    from botgrpo_cli.trl_environments import with_environments

    ids = [row[keep].tolist() for row, keep in zip(batch.completion_ids, batch.mask)]
    messages = [scoring.messages(examples[lo + i // n]) for i in range(len(requests))]
    extras = with_environments({"messages": messages, "completion_ids": ids}, batch)  # TRL's environments, if any
    return scoring.pool.submit_batch(requests, extras)


def _done(response: Any) -> Future:
    future: Future = Future()
    future.set_result(response)
    return future


def _relative(path: Any, root: Path | None) -> str | None:
    if not (isinstance(path, str) and path):
        return None
    return path if root is None else os.path.relpath(path, root)


def _sample(row: Pending, success_metric: str, root: Path | None) -> Sample:
    resp = response_of(row.task)
    ok = resp.usable
    metrics = {k: float(v) for k, v in resp.metrics.items()} if ok else {}
    shot, render_status, render_error = resp.info.get("screenshot"), None, None
    if row.render is not None:
        shown = response_of(row.render)
        shot, render_status = shown.info.get("screenshot"), shown.status
        if shown.ok:
            metrics.update({k: float(v) for k, v in shown.metrics.items()})
            render_error = shown.info.get("render_error") or row.render_note  # why it did not render
        else:
            render_error = shown.error.message if shown.error else "no answer"
    status = "ok" if ok else ("error" if resp.ok else resp.status)  # ok without a score is an error
    error = None if ok else f"{status}: {resp.error.message if resp.error else 'no score'}"
    return Sample(text=row.text, status=status, score=float(resp.score) if ok else None,
                  success=ok and succeeded(metrics, success_metric), metrics=metrics, tokens=row.tokens,
                  finished=row.finished, error=error, screenshot=_relative(shot, root), render_status=render_status,
                  render_error=render_error, **row.counts)


def rerender_unjudged(rows: list[Pending], pool: Any) -> None:
    """A reference that does not render makes the similarity judge answer `bad_request`; that says
    nothing about the sample, so render it again with no judge: it still counts for the render rate
    and gets its screenshot (its similarity stays unmeasured)."""
    for row in rows:
        if row.render is None or row.render_request is None or row.render_request.options["judge"] == "none":
            continue
        resp = response_of(row.render)
        if resp.error is not None and resp.error.type == "bad_request":
            request = row.render_request  # without reference_code: the service would render it again
            retry = dataclasses.replace(request, options={**request.options, "judge": "none"},
                                        reference={k: v for k, v in request.reference.items() if k != "reference_code"})
            row.render, row.render_note = pool.submit(retry), f"similarity not measured: {resp.error.message}"


def collect(rows: list[Pending], examples: list, success_metric: str, root: Path | None) -> list[Problem]:
    """Wait for every response and group samples by problem (failed scorings stay, as failures)."""
    problems = [Problem(ex.id, ex.prompt, []) for ex in examples]
    for row in rows:
        problems[row.problem].samples.append(_sample(row, success_metric, root))
    return problems


def evaluate(engine: Engine | MultiTurn, examples: list, prompts: list[str], n: int, params: SamplingParams, scoring: Scoring,
             batch_size: int = 8, shots: Path | None = None, root: Path | None = None,
             tick: Callable[[int], None] = lambda k: None) -> list[Problem]:
    """Sample n completions of each example (prompts[i] is examples[i] as the model sees it) and
    score them; failed scorings stay in the table, as failures. Screenshot paths are made relative
    to `root` (absolute when None)."""
    rows = submit_all(engine, examples, prompts, n, params, scoring, shots, batch_size, tick)
    if scoring.render_pool is not None:
        rerender_unjudged(rows, scoring.render_pool)
    return collect(rows, examples, scoring.success_metric, root)


def held_out(engine: Engine | MultiTurn, tok: Any, task: Any, scoring: Scoring, params: SamplingParams, prompts: int,
             samples: int = 1, batch_size: int = 8, tick: Callable[[int], None] = lambda k: None,
             system_prompt: str | None = None, template_kwargs: dict | None = None,
             chat_template: str = "auto") -> list[Problem]:
    """`evaluate` on the first `prompts` problems of the task's eval split, formatted for `tok`
    (with a system prompt, chat-template arguments and run.chat_template's choice when given)."""
    examples = task.eval_examples()[:prompts]
    texts = [task.format_prompt(ex, tok, system_prompt, template_kwargs, chat_template) for ex in examples]
    return evaluate(engine, examples, texts, samples, params, scoring, batch_size, tick=tick)
