"""curves.png: training curves from metrics.jsonl (matplotlib, Agg backend, no display needed)."""

from __future__ import annotations

from pathlib import Path

PANELS = [("reward/mean", "reward"), ("success", "success"), ("kl", "KL"), ("completion/length_mean", "length"),
          ("entropy", "entropy"), ("eval/success", "eval success")]


def plot_curves(records: list[dict], out: Path, title: str) -> Path | None:
    """One small panel per metric that was recorded; None when there is nothing to plot."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [(k, label) for k, label in PANELS if any(r.get(k) is not None for r in records)]
    if not panels:
        return None
    fig, axes = plt.subplots(1, len(panels), figsize=(3.2 * len(panels), 2.8), squeeze=False)
    for ax, (key, label) in zip(axes[0], panels):
        pts = [(r["step"], r[key]) for r in records if r.get(key) is not None]
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="." if len(pts) < 30 else None)
        ax.set_title(label)
        ax.set_xlabel("step")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out
