"""convergence.json, convergence.md and convergence.png, all drawn from the one summary dict."""

from __future__ import annotations

import json
from pathlib import Path

JSON_NAME, MD_NAME, PNG_NAME = "convergence.json", "convergence.md", "convergence.png"
DIAGNOSTIC_COLUMNS = ("success", "groups/zero_variance_frac", "adv/std", "completion/length_mean",
                      "completion/finished_frac", "entropy", "clip_frac")


def _steps(entry: dict, max_step: int) -> str:
    """'median (min to max)' of steps to a target over seeds; '>N' where not reached within N steps."""
    def one(v) -> str:
        return f">{max_step}" if v is None else f"{v:g}"

    if entry["min"] is None:
        return f">{max_step} (no seed)"
    return f"{one(entry['median'])} ({one(entry['min'])} to {one(entry['max'])})"


def _ratio(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}x"


def table_rows(summary: dict) -> list[list[str]]:
    """Header and one row per algorithm, every cell formatted from the summary's numbers."""
    targets = [f"{t:g}" for t in summary["targets"]]
    max_step = summary["settings"]["steps"]
    header = ["algorithm"]
    for t in targets:
        header += [f"steps to {t}", f"speed-up vs {summary['baseline']} ({t})"]
    header += [f"final {summary['metric']}", "train wall s/run", "train s/step"]
    rows = [header]
    for algo, s in summary["algorithms"].items():
        row = [algo]
        for t in targets:
            row += [_steps(s["targets"][t], max_step), _ratio(s["targets"][t]["speedup"])]
        f = s["final"]
        row += [f"{f['median']:.3f} ({f['min']:.3f}-{f['max']:.3f})", f"{s['train_seconds']['median']:.0f}",
                f"{s['train_seconds']['median'] / max_step:.2f}"]
        rows.append(row)
    return rows


def render_markdown(summary: dict, png_name: str = PNG_NAME) -> str:
    st = summary["settings"]
    rows = table_rows(summary)
    lines = [f"# Convergence on {summary['task']}: {summary['metric']} over training steps", "",
             f"Held-out {summary['metric']}, sampled at T=1 on {st['eval_prompts']} prompts x {st['eval_samples']} "
             f"samples every {st['eval_every']} steps; seeds {', '.join(map(str, st['seeds']))}; {st['steps']} steps. "
             f"Steps to target: median over seeds (min to max); '>N' = not reached within the run. Speed-up = "
             f"{summary['baseline']}'s median steps / this algorithm's.", "",
             "| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
    lines += ["| " + " | ".join(r) + " |" for r in rows[1:]]
    lines += ["", "Training-batch diagnostics (mean over seeds; success is the training batch's):", "",
              "| algorithm | steps | success | zero-variance groups | adv std | length | finished | entropy | clip frac |",
              "|---|---|---|---|---|---|---|---|---|"]
    for algo, s in summary["algorithms"].items():
        for window, d in s["diagnostics"].items():
            cells = [d[k] for k in DIAGNOSTIC_COLUMNS]
            lines.append(f"| {algo} | {window.removeprefix('steps ')} | "
                         + " | ".join("n/a" if c is None else f"{c:.3f}" for c in cells) + " |")
    lines += ["", f"![{summary['metric']} vs step]({png_name})", "",
              f"Config overrides for every run: {', '.join(st['sets']) or 'none'}."]
    lines += [f"Overrides for {algo}'s runs: {', '.join(extra)}." for algo, extra in st.get("algo_sets", {}).items()]
    lines += [""]
    return "\n".join(lines)


def plot(summary: dict, out: Path) -> Path:
    """Metric vs step: median over seeds per algorithm, min-max over seeds shaded, targets dashed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    for algo, s in summary["algorithms"].items():
        c = s["curve"]
        (line,) = ax.plot(c["steps"], c["median"], marker=".", label=algo)
        ax.fill_between(c["steps"], c["min"], c["max"], color=line.get_color(), alpha=0.2, linewidth=0)
    for t in summary["targets"]:
        ax.axhline(t, color="grey", linestyle="--", linewidth=0.8)
    ax.set_xlabel("training step")
    ax.set_ylabel(f"held-out {summary['metric']}")
    ax.set_title(f"{summary['task']}: median over {len(summary['settings']['seeds'])} seed(s), band = min-max")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def write_outputs(summary: dict, out_dir: Path) -> dict[str, Path]:
    """Write the JSON first, then the table and plot from the JSON as read back."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"json": out_dir / JSON_NAME, "md": out_dir / MD_NAME, "png": out_dir / PNG_NAME}
    paths["json"].write_text(json.dumps(summary, indent=1) + "\n")
    stored = json.loads(paths["json"].read_text())
    paths["md"].write_text(render_markdown(stored))
    plot(stored, paths["png"])
    return paths
