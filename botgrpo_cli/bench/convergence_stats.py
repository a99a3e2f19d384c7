"""Pure numbers of the convergence benchmark: metric values of an evaluation, steps to a target,
medians over seeds, speed-ups against the baseline."""

from __future__ import annotations

import math
import re
import statistics

from botgrpo_cli.evaluation.curves import first_reaching
from botgrpo_cli.evaluation.metrics import mean_pass_at_k

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
