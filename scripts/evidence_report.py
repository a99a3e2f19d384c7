"""The #16 result set in one page: reads the committed convergence.json files under
docs/results/convergence16/ and writes summary.md and sites.png beside them (nothing is re-run).

    .venv/bin/python scripts/evidence_report.py [docs/results/convergence16]

Every figure comes from the benchmark's own summaries (botgrpo_cli/bench/convergence_report.py):
steps to a target are first evaluated steps (evaluations every 10 steps), medians over seeds.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

TRIO = ("grpo", "bot_grpo", "bot_grpo_outcome")
COLOURS = dict(zip(TRIO, ("C0", "C1", "C2")))  # one colour per preset in every panel
SITES = {1: "react_synth_k1", 2: "react_synth_k2", 4: "react_synth_k4"}


def load(root: Path, name: str) -> dict | None:
    path = root / name / "convergence.json"
    return json.loads(path.read_text()) if path.exists() else None


def steps_cell(entry: dict, target: str, max_step: int) -> str:
    per_seed = entry["targets"][target]["per_seed"]
    return " / ".join(str(v) if v is not None else f">{max_step}" for v in per_seed.values())


def final_cell(entry: dict) -> str:
    f = entry["final"]
    return f"{f['median']:.3f} ({f['min']:.3f}-{f['max']:.3f})"


def s_per_step(entry: dict, steps: int) -> str:
    return f"{entry['train_seconds']['median'] / steps:.2f}"


def diag(entry: dict, key: str) -> str:
    value = entry["diagnostics"]["all"].get(key)
    return "n/a" if value is None else f"{value:.3f}"


def preset_table(data: dict) -> list[str]:
    """One row per preset: steps to each target per seed, final value, s/step, batch diagnostics."""
    steps, targets = data["settings"]["steps"], [f"{t:g}" for t in data["targets"]]
    head = ["preset", *(f"steps to {t} (per seed)" for t in targets), f"final {data['metric']}",
            "train s/step", "length", "ended", "entropy"]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for algo, entry in data["algorithms"].items():
        cells = [algo, *(steps_cell(entry, t, steps) for t in targets), final_cell(entry), s_per_step(entry, steps),
                 diag(entry, "completion/length_mean"), diag(entry, "completion/finished_frac"), diag(entry, "entropy")]
        rows.append("| " + " | ".join(cells) + " |")
    return rows


def curve_cell(entry: dict) -> str:
    return " / ".join(f"{v:.3f}" for v in entry["curve"]["median"])


def curves_table(sets: list[tuple[str, dict]]) -> list[str]:
    """Median value at each evaluated step, one row per (label, preset)."""
    first = next(iter(sets[0][1]["algorithms"].values()))
    steps = "/".join(map(str, first["curve"]["steps"]))
    rows = [f"| setting | preset | seeds | median at steps {steps} | final (min-max) |", "|---|---|---|---|---|"]
    for label, data in sets:
        for algo, entry in data["algorithms"].items():
            rows.append(f"| {label} | {algo} | {len(entry['seeds'])} | {curve_cell(entry)} | {final_cell(entry)} |")
    return rows


def paired_gain(data: dict, algo: str) -> list[float]:
    """Final value minus grpo's, seed by seed (the same seed is the same base model, prompts and eval)."""
    mine, base = data["algorithms"][algo]["runs"], data["algorithms"]["grpo"]["runs"]
    return [mine[s]["curve"][-1][1] - base[s]["curve"][-1][1] for s in mine if s in base]


def plot_sites(root: Path, runs: dict[int, dict]) -> Path | None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if not runs:
        return None
    fig, axes = plt.subplots(1, len(runs) + 1, figsize=(4.2 * (len(runs) + 1), 3.4), squeeze=False)
    for ax, (k, data) in zip(axes[0], sorted(runs.items())):
        for algo in TRIO:
            entry = data["algorithms"].get(algo)
            if entry is None:
                continue
            c = entry["curve"]
            ax.plot(c["steps"], c["median"], marker="o", label=algo, color=COLOURS[algo])
            ax.fill_between(c["steps"], c["min"], c["max"], alpha=0.18, color=COLOURS[algo])
        seeds = len(next(iter(data["algorithms"].values()))["seeds"])
        ax.set_title(f"react_synth sites={k} ({seeds} seeds)")
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("held-out all_ok (median, min-max band)")
    axes[0][-2].legend(fontsize=8)
    gain_ax, ks = axes[0][-1], sorted(runs)
    for algo in TRIO[1:]:
        if any(algo not in runs[k]["algorithms"] for k in ks):
            continue
        gains = [sorted(paired_gain(runs[k], algo)) for k in ks]
        if not all(gains):
            continue
        mid = [statistics.median(g) for g in gains]
        gain_ax.plot(ks, mid, marker="o", label=algo, color=COLOURS[algo])
        gain_ax.fill_between(ks, [g[0] for g in gains], [g[-1] for g in gains], alpha=0.18, color=COLOURS[algo])
    gain_ax.axhline(0, color="grey", lw=0.8)
    gain_ax.set_xticks(ks)
    gain_ax.set_xlabel("k (independent spec sites)")
    gain_ax.set_title("final all_ok minus grpo's, by seed")
    gain_ax.legend(fontsize=8)
    gain_ax.grid(alpha=0.3)
    fig.tight_layout()
    out = root / "sites.png"
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def main(root: Path) -> None:
    lines = ["# The #16 result set", "", "Written by `scripts/evidence_report.py` from the convergence.json files "
             "in this folder; each run's own convergence.md has its command line and its diagnostics by step range.", ""]
    react = load(root, "react_synth_k2")
    if react:
        lines += ["## (a) react_synth sites=2, all presets", "", *preset_table(react), ""]
    sites = {k: d for k, name in SITES.items() if (d := load(root, name))}
    if sites:
        lines += ["## (b) react_synth, k independent spec sites", "",
                  *curves_table([(f"sites={k}", d) for k, d in sorted(sites.items())]), ""]
        for k, d in sorted(sites.items()):
            lines += [f"sites={k}:", "", *preset_table(d), ""]
        lines += [
                  "![all_ok vs step at k = 1, 2, 4](sites.png)", ""]
        plot_sites(root, sites)
    arith = [(m, d) for m in ("pass@1", "pass@8") if (d := load(root, f"arith_synth_{m}"))]
    if arith:
        lines += ["## (c) arith_synth pass@1 and pass@8", "", *curves_table(arith), ""]
        lines += ["Batch diagnostics (pass@1 runs):", "", *preset_table(arith[0][1]), ""]
    noisy = load(root, "react_synth_k2_noisy")
    if noisy:
        lines += ["## Noisy spans (drop 0.3, flip 0.1, jitter 3), react_synth sites=2", "", *preset_table(noisy), ""]
    horizon = load(root, "react_synth_k2_60steps")
    if horizon:
        lines += ["## Horizon (added after (a)): react_synth sites=2 over 60 steps", "", *preset_table(horizon), "",
                  *curves_table([("60 steps", horizon)]), ""]
    lr = [(p.name, json.loads((p / "convergence.json").read_text())) for p in sorted((root / "lr_seed100").glob("lr-*"))]
    if lr:
        lines += ["## Learning-rate probe (seed 100, not reported as a result)", "", *curves_table(lr), ""]
    (root / "summary.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {root / 'summary.md'}" + (" and sites.png" if sites else ""))


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/results/convergence16"))
