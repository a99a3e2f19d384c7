"""Aggregates of a results table: unbiased pass@k (docs/algorithms.md §5), success rate, metric
means, lengths.

Pure functions over `Problem` lists (or their per-problem counts); nothing here samples or scores.
"""

from __future__ import annotations

from collections.abc import Sequence

from botgrpo_cli.algos import pass_at_k
from botgrpo_cli.evaluation.results import Problem, Sample


def parse_ks(text: str) -> list[int]:
    """'1,4,16' -> [1, 4, 16] (sorted, unique). Raises ValueError on anything else."""
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if not parts or not all(p.isdigit() and int(p) >= 1 for p in parts):
        raise ValueError(f"k values must be positive integers separated by commas (e.g. 1,4,16), got {text!r}")
    return sorted({int(p) for p in parts})


def problem_pass_at_k(n: int, c: int, ks: Sequence[int]) -> dict[str, float]:
    """pass@k of one problem for every k it has enough samples for (k <= n)."""
    return {f"pass@{k}": pass_at_k(n, c, k) for k in ks if k <= n}


def mean_pass_at_k(counts: Sequence[tuple[int, int]], ks: Sequence[int]) -> tuple[dict[str, float], list[int]]:
    """Mean pass@k over problems given (n, c) per problem, for each k that every problem has n >= k;
    also the ks left out because some problem has fewer samples."""
    if not counts:
        return {}, list(ks)
    smallest = min(n for n, _ in counts)
    kept = [k for k in ks if k <= smallest]
    means = {f"pass@{k}": sum(pass_at_k(n, c, k) for n, c in counts) / len(counts) for k in kept}
    return means, [k for k in ks if k > smallest]


def success_rate(problems: Sequence[Problem]) -> float:
    """Successes over all samples: a sample whose scoring failed counts as a failure (0.0 without samples)."""
    n = sum(p.n for p in problems)
    return sum(p.correct for p in problems) / n if n else 0.0


def success_defined(problems: Sequence[Problem], metric: str) -> bool:
    """Whether the reward says what success is: some scored sample carries the success metric. A
    reward function with no success rule (a length penalty, a count) leaves it out: success is n/a."""
    return any(metric in s.metrics for p in problems for s in p.samples)


def without_success(figures: dict[str, float]) -> dict[str, float]:
    """The figures less success rate and pass@k, for a reward with no success rule."""
    return {k: v for k, v in figures.items() if k != "success_rate" and not k.startswith("pass@")}


def failed_scorings(problems: Sequence[Problem]) -> int:
    """Samples the task's service could not score."""
    return sum(s.status != "ok" for p in problems for s in p.samples)


def metric_means(problems: Sequence[Problem], names: Sequence[str]) -> dict[str, float]:
    """Mean of each named service metric over the samples that carry it (scored ones)."""
    out: dict[str, float] = {}
    for name in names:
        values = [s.metrics[name] for p in problems for s in p.samples if name in s.metrics]
        if values:
            out[name] = sum(values) / len(values)
    return out


def _failed_renders(samples: Sequence) -> dict[str, float]:
    shown = [s for s in samples if s.render_status is not None]
    return {"failed_render": float(sum(s.render_status != "ok" for s in shown))} if shown else {}


def aggregate(problems: Sequence[Problem], ks: Sequence[int], metric_names: Sequence[str]) -> dict[str, float]:
    """One flat dict of figures for a results table (see report.LABELS for what each means).

    success_rate counts samples whose scoring failed as failures; metric means are over scored
    samples, and failed_scoring says how many were not scored.
    """
    samples = [s for p in problems for s in p.samples]
    if not samples:
        raise ValueError("no samples to aggregate")
    passes, _ = mean_pass_at_k([(p.n, p.correct) for p in problems], ks)
    scored = [s.score for s in samples if s.score is not None]
    figures: dict[str, float] = {
        **passes,
        "success_rate": success_rate(problems),
        **metric_means(problems, metric_names),
        **({"score_mean": sum(scored) / len(scored)} if scored else {}),
        "length_mean": sum(s.tokens for s in samples) / len(samples),
        "finished_frac": sum(s.finished for s in samples) / len(samples),
        "failed_scoring": float(failed_scorings(problems)),
        **_failed_renders(samples),
        "problems": float(len(problems)),
        "samples": float(len(samples)),
        **_turn_figures(samples),
    }
    return figures


def _turn_figures(samples: Sequence[Sample]) -> dict[str, float]:
    """Multi-turn samples: model turns per sample, tool calls per sample, and the share of tool calls
    that ran (valid JSON, a known tool, arguments it takes, no error or timeout); {} for single-turn
    rollouts. A multi-turn evaluation reports them even when no sample called a tool (0 calls)."""
    if not any(s.multi_turn for s in samples):
        return {}
    calls = sum(s.tool_calls for s in samples)
    out = {"turns_mean": sum(s.turns for s in samples) / len(samples), "tool_calls_mean": calls / len(samples)}
    if calls:
        out["tool_calls_valid"] = 1.0 - sum(s.tool_errors for s in samples) / calls
    return out
