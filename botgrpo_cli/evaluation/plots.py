"""PNG plots: a run's training curves, eval figures vs training step, and runs compared vs step and
vs wall time."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")  # files only; no display needed
    import matplotlib.pyplot as plt

    return plt


def plot_training(records: list[dict], out: Path, title: str, held_out: Sequence[tuple[int, dict]] = ()) -> Path | None:
    """curves.png: one small panel per recorded metric (evaluation/curves.PANELS). The reward and
    success panels show the training batch's figure (noisy: a few sampled completions of new prompts
    each step) and, beside it, the held-out one at each evaluation (run.eval_every, and the `held_out`
    (step, figures) measured before and after); None when there is nothing to plot."""
    from botgrpo_cli.evaluation.curves import HELD_OUT, PANELS, function_keys, reward_metric_keys

    panels = [(k, label) for k, label in PANELS if any(r.get(k) is not None for r in records)]
    several = [("reward by function", function_keys(records)),
               ("reward metrics", {k.removeprefix("reward/"): k for k in reward_metric_keys(records)})]
    several = [(label, lines) for label, lines in several if lines]
    if not panels and not several:
        return None
    plt = _pyplot()
    n = len(panels) + len(several)
    fig, axes = plt.subplots(1, n, figsize=(3.4 * n, 3.0), squeeze=False)
    for ax, (label, lines) in zip(axes[0][len(panels):], several):  # one line per function or metric
        for name, key in lines.items():
            pts = [(r["step"], r[key]) for r in records if r.get(key) is not None]
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="." if len(pts) < 30 else None, label=name)
        ax.legend(fontsize=7)
        ax.set_title(label)
        ax.set_xlabel("step")
    for ax, (key, label) in zip(axes[0], panels):
        pts = [(r["step"], r[key]) for r in records if r.get(key) is not None]
        evals = _held_out_points(records, held_out, HELD_OUT.get(key))
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="." if len(pts) < 30 else None, alpha=0.6,
                label="training batch" if evals else None)
        if evals:
            ax.plot([s for s, _ in evals], [v for _, v in evals], marker="o", color="C3", linewidth=2,
                    label="held-out prompts")
            ax.legend(fontsize=7)
        ax.set_title(label)
        ax.set_xlabel("step")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out


def _held_out_points(records: list[dict], extra: Sequence[tuple[int, dict]], key: str | None) -> list[tuple[int, float]]:
    """(step, value) of the held-out figure `key`, from metrics.jsonl and the extra measurements."""
    if key is None:
        return []
    points = {r["step"]: r[key] for r in records if r.get(key) is not None}
    points.update({step: figs[key] for step, figs in extra if figs.get(key) is not None})
    return sorted(points.items())


def plot_vs_step(points: Sequence[tuple[int, dict[str, float]]], keys: Sequence[str], out: Path, title: str) -> Path:
    """One line per figure in `keys` (rates in [0, 1]) against the checkpoint's step."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    steps = [step for step, _ in points]
    for key in keys:
        ys = [figs.get(key) for _, figs in points]
        ax.plot(steps, [float("nan") if y is None else y for y in ys], marker="o", label=key)
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("training step")
    ax.set_ylabel("rate")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out


def plot_runs(curves: Sequence[Any], metric: str, target: float | None, out: Path) -> Path:
    """Two panels: `metric` vs step and vs wall time (s), one line per run (compare.Curve)."""
    plt = _pyplot()
    fig, (by_step, by_time) = plt.subplots(1, 2, figsize=(11, 4.0))
    for c in curves:
        marker = "." if len(c.steps) < 40 else None
        by_step.plot(c.steps, c.values, marker=marker, label=c.name)
        by_time.plot(c.wall_s, c.values, marker=marker, label=c.name)
    for ax, xlabel in ((by_step, "step"), (by_time, "wall time (s)")):
        if target is not None:
            ax.axhline(target, color="grey", linestyle="--", linewidth=1)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(metric)
        ax.grid(alpha=0.3)
    by_step.legend(fontsize=8)
    fig.suptitle(f"{metric}" + (f" (target {target:g})" if target is not None else ""))
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out
