"""`botgrpo eval` end to end: resolve models, sample and score, judge pairs, write the reports."""

from __future__ import annotations

import copy
import dataclasses
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from botgrpo_cli.config import Config, checked
from botgrpo_cli.errors import UserError
from botgrpo_cli.evaluation import models, pairwise, report, sheets, winrate
from botgrpo_cli.evaluation.metrics import aggregate, success_defined, without_success
from botgrpo_cli.evaluation.pools import open_scoring
from botgrpo_cli.evaluation.results import Problem
from botgrpo_cli.redact import redact
from botgrpo_cli.reward_client.remote import url_list
from botgrpo_cli.evaluation.sampling import Scoring, evaluate
from botgrpo_cli.rollout.turns import MultiTurn, settings_from, turns_over

SPLITS = ("eval", "train", "all")  # all: every problem the task has (for aime: the whole file)
RENDER_FIGURES = ("rendered", "similarity", "judge")
ROLLOUTS = "rollouts.jsonl"  # every scored completion as a request line: `botgrpo reward score` reads it
PLOTTED = ("syntax_ok", "types_ok", "rendered", "similarity", "correct")  # rates, beside pass@k


# The config fields eval reads, by the name eval.json's "config" gives each (the flat names of before)
CONFIG_FIELDS = {"task": "run.task", "task_options": "run.task_options", "seed": "run.seed",
                 "temperature": "rollout.temperature", "top_p": "rollout.top_p", "top_k": "rollout.top_k",
                 "min_p": "rollout.min_p", "repetition_penalty": "rollout.repetition_penalty",
                 "max_new_tokens": "rollout.max_new_tokens", "thinking_budget": "rollout.thinking_budget",
                 "max_turns": "rollout.max_turns", "system_prompt": "run.system_prompt",
                 "chat_template_kwargs": "run.chat_template_kwargs", "chat_template": "run.chat_template",
                 "tools": "run.tools", "environment": "run.environment", "autocast": "model.autocast",
                 "workers": "reward.workers", "deadline_ms": "reward.deadline_ms", "reward_function": "reward.function",
                 "reward_url": "reward.url", "reward_service": "reward.service"}


@dataclass
class EvalOptions:
    """Everything `botgrpo eval` takes (see its --help for each). What training also sets (the task
    and its options, the seed, sampling, prompt formatting, precision, multi-turn settings and the
    reward) is `config`, the training config's own sections, checked by the same rules
    (config.checked) and read the same way: SamplingParams.from_config, rollout.turns.settings_from,
    the reward through open_reward. Fields of it eval has no use for (optim, algo, log) are ignored."""

    model: str  # hub id, model folder, .gguf file, checkpoint folder, or a run directory (every checkpoint)
    out: Path
    config: Config = field(default_factory=Config)
    n: int = 4
    ks: list[int] = field(default_factory=lambda: [1])
    split: str = "eval"
    limit: int | None = None
    against: str | None = None
    judge: str = "auto"
    render: bool = True  # React tasks: screenshots, render rate, similarity
    batch_size: int = 32  # completions per generate call (whole problems: at least one problem's n)

    @property
    def task(self) -> str:
        return self.config.run.task


def check(opts: EvalOptions) -> Config:
    """Reject bad option values before anything is loaded; the config, checked (a new Config)."""
    if opts.n < 1:
        raise UserError(f"--n must be at least 1, got {opts.n}")
    too_big = [k for k in opts.ks if k > opts.n]
    if too_big:
        raise UserError(f"--k {','.join(map(str, too_big))} is larger than --n {opts.n}: pass@k needs at least k "
                        f"samples per problem; raise --n to {max(too_big)} or drop those k")
    if opts.split not in SPLITS:
        raise UserError(f"--split must be one of {', '.join(SPLITS)}, got {opts.split!r}")
    if opts.limit is not None and opts.limit < 1:
        raise UserError(f"--limit must be at least 1, got {opts.limit}")
    if opts.judge not in pairwise.JUDGES:
        raise UserError(f"--judge must be one of {', '.join(pairwise.JUDGES)}, got {opts.judge!r}")
    if opts.batch_size < 1:
        raise UserError(f"--batch-size must be at least 1, got {opts.batch_size}")
    return checked(opts.config)


def load_task(opts: EvalOptions) -> tuple[Any, list]:
    """The task and the problems to evaluate (the split, cut to --limit)."""
    from botgrpo_tasks import get_task

    try:
        task = get_task(opts.task, seed=opts.config.run.seed, **opts.config.run.task_options)
    except TypeError as err:
        raise UserError(f"--task-option values do not fit task {opts.task!r}: {err}") from None
    examples = split_examples(task, opts.split)
    examples = examples[: opts.limit] if opts.limit else examples
    if not examples:
        raise UserError(f"task {opts.task!r} has no {opts.split} problems; check its data or use --split train")
    return task, examples


def split_examples(task: Any, split: str) -> list:
    if split == "eval":
        return task.eval_examples()
    if split == "train":
        return task.train_examples()
    return task.train_examples() + task.eval_examples()


def scope(task: Any, opts: EvalOptions, scored: int) -> dict[str, Any]:
    """What is scored, in numbers: the split, how many of its problems, and the sizes of both splits
    (a task that holds out a share of one file, as aime does, scores only that share by default)."""
    sizes = {"eval": len(task.eval_examples()), "train": len(task.train_examples())}
    sizes["all"] = sizes["eval"] + sizes["train"]
    return {"split": opts.split, "problems": scored, "split_size": sizes[opts.split], "eval_size": sizes["eval"],
            "train_size": sizes["train"]}


def scope_line(s: dict[str, Any]) -> str:
    line = (f"scoring {s['problems']} of the {s['split_size']} problems of the {s['split']} split "
            f"(eval split {s['eval_size']}, train split {s['train_size']})")
    if s["split"] != "all":
        line += "; --split all scores every problem"
    return line


def _targets(opts: EvalOptions) -> tuple[list[models.Target], models.Target | None]:
    targets = models.resolve(opts.model)
    if opts.against is None:
        return targets, None
    if len(targets) > 1:
        raise UserError("--against compares two single models; give one checkpoint of the run, not the run directory")
    other = models.resolve(opts.against, label="against")
    if len(other) > 1:
        raise UserError("--against takes one model; give one checkpoint of the run, not the run directory")
    return targets, other[0]


def _figure_names(task: Any, problems: list | None = None) -> list[str]:
    """The metrics eval.md shows: the task's; for a reward the user names (no task service), also
    every metric its answers carry (each function's NAME/score, log_metric's, the function's own)."""
    named = [task.success_metric, *task.eval_metrics, *RENDER_FIGURES]
    if task.service is None and problems:
        named += sorted({k for p in problems for smp in p.samples for k in smp.metrics})
    return list(dict.fromkeys(named))


def _evaluate(target: models.Target, task: Any, examples: list, opts: EvalOptions, scoring: Scoring,
              shots_root: Path | None, progress: Any) -> tuple[dict, list[Problem]]:
    from botgrpo_cli.console import console
    from botgrpo_cli.rollout import FastEngine, SamplingParams
    from botgrpo_cli.models.precision import autocast, choose

    from botgrpo_cli.models.loading import thinking_mismatch

    cfg = opts.config
    model, tok = models.load(target)
    bf16, why = choose(cfg.model.autocast, model)  # the same rule as training's, so both sample alike
    console.print(f"{target.label}: precision: {why}", soft_wrap=True)
    mismatch = thinking_mismatch(tok, task.think_tags, cfg.rollout.thinking_budget, cfg.run.chat_template_kwargs)
    if mismatch:  # as in training: the options would silently do nothing on this model
        console.print(f"[yellow]warning:[/] {target.label}: {mismatch}", soft_wrap=True)
    params = SamplingParams.from_config(cfg.rollout, task, seed=cfg.run.seed)
    shots = shots_root / target.label / "png" if shots_root is not None else None
    per_call = max(1, opts.batch_size // opts.n)  # problems per generate call: bounded rows, whole problems
    tick = progress_ticker(progress, target.label, len(examples))
    with autocast(bf16), _turns(FastEngine(model, tok), tok, task, opts, scoring) as engine:
        kwargs = engine.template_kwargs if isinstance(engine, MultiTurn) else cfg.run.chat_template_kwargs
        prompts = [task.format_prompt(ex, tok, cfg.run.system_prompt, kwargs, cfg.run.chat_template) for ex in examples]
        problems = evaluate(engine, examples, prompts, opts.n, params, scoring, per_call, shots, opts.out, tick=tick)
    figures = aggregate(problems, opts.ks, _figure_names(task, problems))
    if task.service is None and not success_defined(problems, task.success_metric):
        figures = without_success(figures)  # shown as n/a: the user's reward has no success rule
    entry = {"label": target.label, "model": target.path, "step": target.step, "precision": why,
             "aggregates": figures,
             "problems": report.problem_rows(problems, opts.ks)}
    if shots is not None:
        entry["contact_sheet"] = sheets.write(problems, shots.parent, opts.out, f"{opts.task}: {target.label}")
    return entry, problems


def _turns(engine: Any, tok: Any, task: Any, opts: EvalOptions, scoring: Scoring) -> Any:
    """The engine, or multi-turn rollouts over it (tools started for the evaluation, closed after)."""
    settings = settings_from(opts.config.rollout, opts.config.run, task)
    return turns_over(engine, tok, task, settings, scoring.pool, scoring.options, scoring.deadline_ms)


def progress_ticker(progress: Any, label: str, total: int) -> Callable[[int], None]:
    """Advance the progress bar per generated chunk; when the console is not a terminal (a log
    file, CI) also print one plain line per chunk, so a long run shows it is moving."""
    from botgrpo_cli.console import console

    bar = progress.add_task(f"{label}: sampling", total=total)
    start, done = time.monotonic(), [0]

    def tick(k: int) -> None:
        progress.advance(bar, k)
        done[0] += k
        if not console.is_terminal:
            elapsed = time.monotonic() - start
            left = elapsed / done[0] * (total - done[0])
            console.print(f"{label}: sampled {done[0]}/{total} problems, {elapsed:.0f} s, about {left:.0f} s left",
                          soft_wrap=True)
    return tick


class Recording:
    """The task's pool, keeping each request it was sent (for rollouts.jsonl), under the label of
    the model being evaluated (set per target) so ids stay unique across checkpoints."""

    def __init__(self, pool: Any):
        self.pool, self.label = pool, ""
        self._lines: dict[str, dict] = {}  # by id: a request sent again (a render retry) keeps one line, its last

    def __getattr__(self, name: str) -> Any:
        return getattr(self.pool, name)

    @property
    def lines(self) -> list[dict]:
        return list(self._lines.values())

    def submit(self, request: Any) -> Any:
        self._record(request)
        return self.pool.submit(request)

    def submit_batch(self, requests: list, extras: dict | None = None) -> list:
        """The wrapped pool's whole-batch call (reward functions), each request recorded."""
        for request in requests:
            self._record(request)
        return self.pool.submit_batch(requests, extras)

    def _record(self, request: Any) -> None:
        line = {k: v for k, v in request.to_json().items() if k not in ("v", "op")}
        if self.label:
            line = {**line, "id": f"{self.label}/{line['id']}", "model": self.label}
        self._lines[str(line["id"])] = line


def write_rollouts(path: Path, lines: list[dict]) -> None:
    """The requests eval scored, one per line, in the format `botgrpo reward score` reads."""
    from botgrpo_cli.reward_client.rollouts import encode_row

    with path.open("w", encoding="utf-8") as f:
        for line in lines:
            f.write(encode_row(line))


def run_eval(opts: EvalOptions) -> dict[str, Any]:
    """Evaluate, write eval.json / eval.md (and screenshots, plots) under opts.out; return the report."""
    from botgrpo_cli.console import console, progress_bar

    opts = dataclasses.replace(opts, config=check(opts))  # checked: typed values, the preset applied
    task, examples = load_task(opts)
    targets, against = _targets(opts)
    render = opts.render and task.render_service is not None
    judge = pairwise.choose_judge(opts.judge, render)
    if against is not None and judge != "score" and not render:
        raise UserError(f"--judge {judge} needs rendered React components; use --judge score for task {opts.task!r}")
    opts.out.mkdir(parents=True, exist_ok=True)
    scored = scope(task, opts, len(examples))
    console.print(scope_line(scored), soft_wrap=True)
    shots_root = opts.out.resolve() / "screens" if render else None  # absolute: services save there
    evaluations, finals, other, win = [], [], None, None
    with ExitStack() as stack, progress_bar() as progress:
        scoring = open_scoring(stack, task, opts.config.reward, render, shots_root, wrap=Recording)
        several = len(targets) > 1 or against is not None
        for target in targets:
            scoring.pool.label = target.label if several else ""
            entry, finals = _evaluate(target, task, examples, opts, scoring, shots_root, progress)
            evaluations.append(entry)
        if against is not None:
            scoring.pool.label = against.label
            other, other_problems = _evaluate(against, task, examples, opts, scoring, shots_root, progress)
            win = _win_rate(finals, other_problems, examples, judge, scoring, opts)
        write_rollouts(opts.out / ROLLOUTS, scoring.pool.lines)
    result = _report(opts, task, evaluations, other, judge, win)
    result["scope"] = scored
    report.write_json(opts.out / "eval.json", result)
    (opts.out / "eval.md").write_text(report.markdown(result, finals, opts.ks), encoding="utf-8")
    return result


def _win_rate(a: list[Problem], b: list[Problem], examples: list, judge: str, scoring: Scoring,
              opts: EvalOptions) -> dict[str, float]:
    """The judged win rate of the model over --against, with its bootstrap interval."""
    outcomes, undecided = pairwise.judge_pairs(a, b, examples, judge, scoring.render_pool, scoring.deadline_ms)
    if not any(outcomes):
        raise UserError(f"the {judge} judge could not decide any of the {undecided} pairs (service errors); "
                        "check the render service (`botgrpo reward serve render`) or use --judge score")
    return {**winrate.summarize(outcomes, seed=opts.config.run.seed), "undecided": float(undecided)}


def recorded(opts: EvalOptions) -> dict[str, Any]:
    """eval.json's "config": eval's own options and the config fields it reads, flat (CONFIG_FIELDS)."""
    own = {f.name: getattr(opts, f.name) for f in dataclasses.fields(opts) if f.name != "config"}
    read = {name: _get(opts.config, dotted) for name, dotted in CONFIG_FIELDS.items()}
    read["reward_url"] = url_list(read["reward_url"])  # a list, empty when none (as the flag gives it)
    return {**own, **read, "out": str(opts.out)}


def _get(cfg: Config, dotted: str) -> Any:
    section, key = dotted.split(".")
    return copy.deepcopy(getattr(getattr(cfg, section), key))


def _report(opts: EvalOptions, task: Any, evaluations: list[dict], other: dict | None, judge: str,
            win: dict[str, float] | None) -> dict[str, Any]:
    config = redact({**recorded(opts), "max_new_tokens": opts.config.rollout.max_new_tokens or task.max_new_tokens})
    result: dict[str, Any] = {
        "config": config,
        "task": {"name": task.name, "service": task.service, "success_metric": task.success_metric,
                 "eval_metrics": list(task.eval_metrics)},
        "aggregates": evaluations[-1]["aggregates"],
        "evaluations": evaluations,
        "contact_sheets": [{"label": e["label"], "path": e["contact_sheet"]} for e in evaluations + [other or {}]
                           if e.get("contact_sheet")],
    }
    if other is not None:
        result.update(against=other, judge=judge, win_rate=win)
    steps = [(e["step"], e["aggregates"]) for e in evaluations if e["step"] is not None]
    if len(steps) > 1:
        rates = (*(f"pass@{k}" for k in opts.ks), *(("success_rate",) if 1 not in opts.ks else ()), *PLOTTED)
        keys = [k for k in rates if k in steps[-1][1]]  # success_rate is pass@1: shown once
        from botgrpo_cli.evaluation.plots import plot_vs_step

        plot_vs_step(steps, keys, opts.out / "metrics_vs_step.png", f"{opts.task}: eval vs training step")
        result["plot"] = "metrics_vs_step.png"
    return result
