"""The numbers and outputs of the convergence benchmark: metric values of an evaluation record,
steps to a target, medians over seeds, speed-ups against the baseline, curves and diagnostics; then
convergence.json, convergence.md and convergence.png, all drawn from the one summary dict.

(convergence_stats.py moved in here, with the summary helpers of convergence.py.)
"""

from __future__ import annotations

import json
import math
import re
import statistics
from pathlib import Path

from botgrpo_cli.evaluation.curves import first_reaching
from botgrpo_cli.evaluation.metrics import mean_pass_at_k

JSON_NAME, MD_NAME, PNG_NAME = "convergence.json", "convergence.md", "convergence.png"
DIAGNOSTIC_COLUMNS = ("success", "groups/zero_variance_frac", "adv/std", "completion/length_mean",
                      "completion/finished_frac", "entropy", "clip_frac")
_PASS_AT = re.compile(r"^pass@(\d+)$")


def pass_k_of(metric: str) -> int | None:
    """k of a `pass@k` metric name, else None."""
    m = _PASS_AT.match(metric)
    return int(m.group(1)) if m else None


def metric_value(record: dict, metric: str) -> float:
    """The metric of one evaluation record: `pass@k` from per-prompt success counts (unbiased
    estimator, averaged over prompts); the success metric itself is pass@1 (failed scorings count
    as failures, as in `botgrpo eval`'s success rate); any other metric its mean over scored samples."""
    k = 1 if metric == record.get("success_metric") else pass_k_of(metric)
    if k is not None:
        n, counts = int(record["samples"]), record["counts"]
        means, _ = mean_pass_at_k([(n, c) for c in counts], [k])
        return means[f"pass@{k}"]
    if metric not in record["means"]:
        raise KeyError(f"metric {metric!r} not measured; have {', '.join(sorted(record['means']))} and pass@k")
    return float(record["means"][metric])


def curve(records: list[dict], metric: str) -> list[tuple[int, float]]:
    """(step, value) in step order."""
    return sorted((int(r["step"]), metric_value(r, metric)) for r in records)


def steps_to_target(points: list[tuple[int, float]], target: float) -> int | None:
    """First evaluated step whose value reaches the target; None when none does."""
    hit = first_reaching([value for _, value in points], target)
    return None if hit is None else points[hit][0]


def median_censored(values: list[int | None]) -> float | None:
    """Median where None means "not reached within the run" (counted as larger than any step);
    None when the median itself falls on an unreached run."""
    ranked = sorted(math.inf if v is None else float(v) for v in values)
    med = statistics.median(ranked)
    return None if math.isinf(med) else med


def spread(values: list[int | None]) -> tuple[int | None, int | None]:
    """(min, max) over seeds; max is None when some seed never reached the target."""
    reached = [v for v in values if v is not None]
    if not reached:
        return None, None
    return min(reached), (max(reached) if len(reached) == len(values) else None)


def algo_summary(runs: list[dict], metric: str, targets: list[float]) -> dict:
    """One algorithm over its seeds. Each run: {"seed", "evals": [records], "train_seconds"}."""
    curves = {r["seed"]: curve(r["evals"], metric) for r in runs}
    out: dict = {"seeds": sorted(curves), "targets": {}}
    for t in targets:
        per_seed = {str(seed): steps_to_target(points, t) for seed, points in curves.items()}
        lo, hi = spread(list(per_seed.values()))
        out["targets"][_key(t)] = {"per_seed": per_seed, "median": median_censored(list(per_seed.values())),
                                   "min": lo, "max": hi}
    finals = [points[-1][1] for points in curves.values()]
    out["final"] = {"median": statistics.median(finals), "min": min(finals), "max": max(finals),
                    "step": min(points[-1][0] for points in curves.values())}
    out["train_seconds"] = {"median": statistics.median(r["train_seconds"] for r in runs),
                            "total": sum(r["train_seconds"] for r in runs)}
    return out


def speedups(summaries: dict[str, dict], baseline: str, targets: list[float]) -> None:
    """Add `speedup` (baseline median steps / this median steps) to each target entry, in place;
    None where either median is unreached or there is no baseline."""
    for t in targets:
        base = summaries.get(baseline, {}).get("targets", {}).get(_key(t), {}).get("median")
        for s in summaries.values():
            entry = s["targets"][_key(t)]
            entry["speedup"] = base / entry["median"] if base and entry["median"] else None


def _key(target: float) -> str:
    return f"{target:g}"


# A run "games" the compile rate when its spec falls away: react's spec_ok more than GAME_MARGIN
# below the base model's at any evaluation (a trivial component parses and type-checks).
GUARD_METRIC, GAME_MARGIN = "spec_ok", 0.1


def guard(records: list[dict], metric: str = GUARD_METRIC, margin: float = GAME_MARGIN) -> dict | None:
    """The guard metric at step 0 and its lowest later value, and whether it fell more than
    `margin` below step 0 ("gamed"); None when the records do not measure it."""
    points = [(int(r["step"]), float(r["means"][metric])) for r in records if metric in r.get("means", {})]
    points.sort()
    if len(points) < 2 or points[0][0] != 0:
        return None
    base, low = points[0][1], min(v for _, v in points[1:])
    return {"metric": metric, "base": base, "min": low, "final": points[-1][1], "gamed": low < base - margin}


def seconds_at(train_metrics: list[dict], steps: list[int]) -> list[tuple[int, float]] | None:
    """(step, training seconds summed over steps 1..step) at each evaluated step; None when a step's
    time was not recorded (result.json files written before it kept time/step_s)."""
    per_step = {int(m["step"]): m.get("time/step_s") for m in train_metrics}
    out, total, done = [], 0.0, 0
    for step in sorted(steps):
        for s in range(done + 1, step + 1):
            if per_step.get(s) is None:
                return None
            total += per_step[s]
        done = max(done, step)
        out.append((step, round(total, 2)))
    return out


def band(curves: list[list[tuple[int, float]]]) -> dict:
    """Median, min and max over seeds at each step that every seed evaluated."""
    per_seed = [dict(c) for c in curves]
    steps = sorted(set.intersection(*(set(c) for c in per_seed)))
    columns = [[c[st] for c in per_seed] for st in steps]
    return {"steps": steps, "median": [statistics.median(c) for c in columns],
            "min": [min(c) for c in columns], "max": [max(c) for c in columns]}


def diagnostics(runs: list[dict], steps: int) -> dict:
    """Training-batch statistics, mean over seeds: over all steps ("all") and per quarter of the run
    (the share of zero-variance groups, for one, changes as success rises)."""
    quarters = [(q * steps // 4 + 1, (q + 1) * steps // 4) for q in range(4)]
    out: dict = {}
    for name, (lo, hi) in [("all", (1, steps)), *((f"steps {lo}-{hi}", (lo, hi)) for lo, hi in quarters)]:
        rows = [m for r in runs for m in r["train_metrics"] if lo <= m["step"] <= hi]
        out[name] = {}
        for key in DIAGNOSTIC_COLUMNS:
            values = [m[key] for m in rows if m.get(key) is not None]
            out[name][key] = sum(values) / len(values) if values else None
    return out


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
    gamed = [f"{algo} seed {seed}" for algo, s in summary["algorithms"].items()
             for seed, run in s.get("runs", {}).items() if (run.get("guard") or {}).get("gamed")]
    guarded = any(run.get("guard") for s in summary["algorithms"].values() for run in s.get("runs", {}).values())
    if guarded:
        lines += ["", f"Gamed (`{GUARD_METRIC}` more than {GAME_MARGIN:g} below the base model's at some evaluation): "
                  f"{', '.join(gamed) or 'no run'}."]
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
