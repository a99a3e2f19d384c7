"""`botgrpo compare`: training runs side by side from their metrics.jsonl (written by trainer/reports.py).

Wall time is rebuilt from the per-step timings the trainer logs: between two logged lines the run
spent (step gap) x `time/step_s` of the later line, plus `time/eval_s` when that line evaluated.
With `log.every` > 1 this is an estimate for the unlogged steps.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from botgrpo_cli import rundir
from botgrpo_cli.errors import UserError
from botgrpo_cli.evaluation.curves import first_reaching, panel_key
from botgrpo_cli.evaluation.plots import plot_runs

STEP_TIME, EVAL_TIME = "time/step_s", "time/eval_s"


@dataclass
class Curve:
    """One run's metric over its logged steps."""

    name: str
    steps: list[int]
    values: list[float]
    wall_s: list[float]  # estimated seconds since the run started, at each point
    total_wall_s: float  # at the last logged step
    last_step: int


def read_metrics(path: Path) -> list[dict]:
    """The lines of a metrics.jsonl (a run directory or the file), sorted by step."""
    file = path / rundir.METRICS if path.is_dir() else path
    if not file.is_file():
        raise UserError(f"{path}: no metrics.jsonl found; give run directories of `botgrpo train` (or their metrics.jsonl)")
    records = rundir.read_metrics(file)
    if not records:
        raise UserError(f"{file} is empty: that run logged no steps")
    return records


def wall_clock(records: list[dict]) -> list[float]:
    """Estimated elapsed seconds at each record (see the module docstring)."""
    elapsed, previous, step_s, out = 0.0, 0, None, []
    for r in records:
        step_s = r.get(STEP_TIME) if r.get(STEP_TIME) is not None else step_s
        if step_s is None:
            raise UserError(f"metrics line for step {r['step']} has no {STEP_TIME}; cannot tell wall time")
        elapsed += (r["step"] - previous) * step_s + (r.get(EVAL_TIME) or 0.0)
        previous = r["step"]
        out.append(elapsed)
    return out


def _has(records: list[dict], key: str) -> bool:
    return any(isinstance(r.get(key), (int, float)) for r in records)


def resolve_metric(runs: dict[str, list[dict]], metric: str | None) -> str:
    """The metrics.jsonl key every run has: `metric` as given, else eval/`metric`, else reward/`metric`,
    else the key of the curves.png panel so named (`reward` is reward/mean). Default: eval/success
    when every run evaluated, else success (the training batch's)."""
    candidates = ["eval/success", "success"] if metric is None else [metric, f"eval/{metric}", f"reward/{metric}"]
    if metric is not None and panel_key(metric) is not None:
        candidates.append(panel_key(metric))
    for key in candidates:
        if all(_has(records, key) for records in runs.values()):
            return key
    first = next(iter(runs.values()))
    known = sorted(k for k in {k for r in first for k in r} if k != "step" and _has(first, k))
    raise UserError(f"not every run logged {' or '.join(candidates)}; pick --metric from: {', '.join(known)}")


def curve(name: str, records: list[dict], key: str) -> Curve:
    wall = wall_clock(records)
    points = [(r["step"], float(r[key]), t) for r, t in zip(records, wall)
              if isinstance(r.get(key), (int, float)) and math.isfinite(r[key])]
    return Curve(name, [p[0] for p in points], [p[1] for p in points], [p[2] for p in points], wall[-1],
                 records[-1]["step"])


def reached(c: Curve, target: float) -> tuple[int, float] | None:
    """(step, wall seconds) of the first point at or above `target`, or None."""
    hit = first_reaching(c.values, target)
    return None if hit is None else (c.steps[hit], c.wall_s[hit])


def table(curves: list[Curve], key: str, target: float | None) -> str:
    """Markdown: final and best values, steps and wall time to target, total steps and wall time."""
    head = ["run", f"final {key}", f"best {key}"]
    if target is not None:
        head += [f"step reaching {target:g}", f"wall s to {target:g}"]
    head += ["last step", "wall s"]
    lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    for c in curves:
        row = [c.name, f"{c.values[-1]:.3f}", f"{max(c.values):.3f}"]
        if target is not None:
            hit = reached(c, target)
            row += [str(hit[0]), f"{hit[1]:.1f}"] if hit else ["not reached", "–"]
        row += [str(c.last_step), f"{c.total_wall_s:.1f}"]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def _names(paths: list[Path]) -> list[str]:
    """Run names: the folder name, made unique with a counter when two runs share one."""
    base = [(p if p.is_dir() else p.parent).resolve().name or str(p) for p in paths]
    return [b if base.count(b) == 1 else f"{b}#{base[:i].count(b) + 1}" for i, b in enumerate(base)]


def compare_runs(paths: list[Path], out: Path, metric: str | None = None,
                 target: float | None = None) -> tuple[Path, Path, str]:
    """Write compare.png and compare.md under `out`; returns their paths and the table."""
    if not paths:
        raise UserError("give at least one run directory to compare")
    runs = dict(zip(_names(paths), (read_metrics(p) for p in paths)))
    key = resolve_metric(runs, metric)
    curves = [curve(name, records, key) for name, records in runs.items()]
    out.mkdir(parents=True, exist_ok=True)
    png = plot_runs(curves, key, target, out / "compare.png")
    text = table(curves, key, target)
    md = out / "compare.md"
    md.write_text(f"# botgrpo compare: {key}\n\n{text}\n\nWall time is rebuilt from `{STEP_TIME}` "
                  f"(and `{EVAL_TIME}`) per logged step.\n\n![{key}](compare.png)\n", encoding="utf-8")
    return png, md, text
