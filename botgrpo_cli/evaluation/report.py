"""eval.json (everything) and eval.md (tables people read) for one `botgrpo eval` run."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from botgrpo_cli.algos.metrics import SUCCESS_AT
from botgrpo_cli.evaluation.metrics import problem_pass_at_k
from botgrpo_cli.evaluation.results import Problem, to_dict

LABELS = {  # figure -> what the Markdown table calls it
    "success_rate": "success rate",
    "compile": "compile rate (parses and type-checks)",
    "syntax_ok": "compile rate: syntax",
    "types_ok": "compile rate: types",
    "rendered": "render rate",
    "similarity": "judge score (similarity to reference)",
    "judge": "judge score",
    "correct": "correct",
    "extracted": "answer extracted",
    "steps_wrong": "wrong steps (mean)",
    "score_mean": "mean score",
    "length_mean": "mean length (tokens)",
    "finished_frac": "ended by EOS/stop",
    "failed_scoring": "failed scorings",
    "failed_render": "failed renders",
    "problems": "problems",
    "samples": "samples",
    "turns_mean": "model turns (mean)",
    "tool_calls_mean": "tool calls per sample",
    "tool_calls_valid": "tool calls that ran",
}


# eval options beyond temperature and top-p that eval.md names when set: (key, words, value when off)
SAMPLING_FILTERS = (("top_k", "top-k", 0), ("min_p", "min-p", 0.0), ("repetition_penalty", "repetition penalty", 1.0))


def problem_rows(problems: list[Problem], ks: list[int]) -> list[dict[str, Any]]:
    """Per-problem detail for eval.json: samples with scores and metrics, plus that problem's pass@k."""
    return [{**to_dict(p), "pass_at_k": problem_pass_at_k(p.n, p.correct, ks)} for p in problems]


def write_json(path: Path, report: dict[str, Any]) -> None:
    path.write_text(json.dumps(report, indent=1, ensure_ascii=False, allow_nan=False) + "\n", encoding="utf-8")


COUNTS = ("failed_scoring", "failed_render", "problems", "samples")


def _fmt(value: float | None, count: bool = False) -> str:
    if value is None or math.isnan(value):
        return "–"
    return f"{int(value)}" if count else f"{value:.3f}"


def _label(key: str) -> str:
    return key if key.startswith("pass@") else LABELS.get(key, key)


def figures_table(columns: list[tuple[str, dict[str, float]]]) -> str:
    """Markdown: one row per figure, one column per evaluated model."""
    keys = list(dict.fromkeys(k for _, figs in columns for k in figs))
    keys.sort(key=lambda k: (not k.startswith("pass@"), int(k[5:]) if k.startswith("pass@") else 0))
    lines = ["| figure | " + " | ".join(name for name, _ in columns) + " |",
             "|---|" + "---:|" * len(columns)]
    lines += [f"| {_label(k)} | " + " | ".join(_fmt(figs.get(k), k in COUNTS) for _, figs in columns) + " |" for k in keys]
    return "\n".join(lines)


def problems_table(problems: list[Problem], ks: list[int], success: bool = True) -> str:
    """Markdown: each problem's n, correct count and pass@k (without a success rule: its mean score)."""
    if not success:
        lines = ["| problem | n | mean score |", "|---|---:|---:|"]
        for p in problems:
            scores = [s.score for s in p.samples if s.score is not None]
            pid = p.id.replace("|", "\\|")
            lines.append(f"| {pid} | {p.n} | {_fmt(sum(scores) / len(scores) if scores else None)} |")
        return "\n".join(lines)
    shown = [k for k in ks if all(k <= p.n for p in problems)]
    lines = ["| problem | n | correct | " + " | ".join(f"pass@{k}" for k in shown) + " |",
             "|---|---:|---:|" + "---:|" * len(shown)]
    for p in problems:
        detail = problem_pass_at_k(p.n, p.correct, shown)
        pid = p.id.replace("|", "\\|")  # ids come from user data
        lines.append(f"| {pid} | {p.n} | {p.correct} | " + " | ".join(_fmt(detail[f'pass@{k}']) for k in shown) + " |")
    return "\n".join(lines)


def win_rate_line(win: dict[str, float], judge: str, a: str, b: str) -> str:
    return (f"**Win rate of {a} over {b}** ({judge} judge, both orders, disagreement = tie): "
            f"{win['win_rate']:.3f} (95% bootstrap CI {win['ci_low']:.3f}–{win['ci_high']:.3f}; "
            f"{int(win['wins'])} wins, {int(win['ties'])} ties, {int(win['losses'])} losses "
            f"over {int(win['pairs'])} pairs; {int(win.get('undecided', 0))} undecided)")


NO_SUCCESS_RULE = ("n/a: the reward reports no `success` metric, so success rate and pass@k are not defined "
                   "(a reward function defines it by returning {score, metrics: {success: 0 or 1}}, or in "
                   "training by reward.success_threshold)")


def success_rule(report: dict[str, Any]) -> str:
    """How success was decided, or why it is not defined (a continuous reward with no rule)."""
    if all("success_rate" not in e["aggregates"] for e in report["evaluations"]):
        return NO_SUCCESS_RULE
    return f"{report['task']['success_metric']} >= {SUCCESS_AT:g}"


def markdown(report: dict[str, Any], final_problems: list[Problem], ks: list[int]) -> str:
    cfg, task = report["config"], report["task"]
    columns = [(e["label"], e["aggregates"]) for e in report["evaluations"]]
    if "against" in report:
        columns.append((report["against"]["label"], report["against"]["aggregates"]))
    scope = report.get("scope")
    scored = (f"{scope['problems']} of the {scope['split_size']} problems of the {scope['split']} split "
              f"(eval split {scope['eval_size']}, train split {scope['train_size']}). ") if scope else ""
    parts = [f"# botgrpo eval: {cfg['task']} ({cfg['split']} split)",
             f"Scored: {scored}" + f"model `{cfg['model']}`" + (f", against `{cfg['against']}`" if cfg.get("against") else "") +
             f"; n = {cfg['n']} samples per problem, temperature {cfg['temperature']}, top-p {cfg['top_p']}, "
             f"max {cfg['max_new_tokens']} new tokens, seed {cfg['seed']}. Success: {success_rule(report)}.",
             figures_table(columns)]
    filters = [f"{label} {cfg[key]}" for key, label, off in SAMPLING_FILTERS if cfg.get(key, off) != off]
    if filters:  # the sampling options set beyond temperature and top-p
        parts.insert(2, f"Also sampled with {', '.join(filters)}.")
    if report.get("win_rate"):
        parts.append(win_rate_line(report["win_rate"], report["judge"], columns[-2][0], columns[-1][0]))
    for sheet in report.get("contact_sheets", []):
        parts.append(f"Screenshots ({sheet['label']}): [{sheet['path']}]({sheet['path']})")
    if report.get("plot"):
        parts.append(f"![metrics vs step]({report['plot']})")
    parts += [f"## Per problem ({columns[-2 if 'against' in report else -1][0]})", problems_table(final_problems, ks, success_rule(report) != NO_SUCCESS_RULE)]
    return "\n\n".join(parts) + "\n"
