"""Records of issue 46's runs (research/preregistration/react_synth_compile.md), each written by a command.

    react46_records.py determinism RUNS_DIR OUT.json "LOADS"   the 4-step runs' metrics compared
    react46_records.py choose PILOT_DIR OUT.json [RISE]         the plan's lr rule applied to the pilot
                                                                (RISE: 0.10 for react compile, 0.03 for math)
    react46_records.py read-choice CHOICE.json                  "LR_GRPO LR_BOT_GRPO STEPS" for the comparison
    react46_records.py same-runs WORK_A WORK_B OUT.json         do two work dirs' runs take the same steps?
    react46_records.py read-sets CHOICE.json                    one `--algo-set ALGO:optim.lr=LR` pair per line
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

from botgrpo_cli import rundir
from botgrpo_cli.bench.convergence_report import GAME_MARGIN
from botgrpo_cli.bench.provenance import provenance

RISE, STAY = 0.10, 0.10  # the plan's "rises" and "stays" margins
TIMING = ("time/", "perf/")  # wall-clock fields differ between identical steps


def _steps(run_dir: Path) -> list[dict]:
    return [{k: v for k, v in m.items() if not k.startswith(TIMING)} for m in rundir.read_metrics(run_dir)]


def _first_difference(a: list[dict], b: list[dict]) -> str | None:
    for x, y in zip(a, b):
        keys = [k for k in sorted(set(x) | set(y)) if x.get(k) != y.get(k)]
        if keys:
            return f"step {x.get('step')}: {', '.join(keys[:6])}"
    return None if len(a) == len(b) else f"{len(a)} vs {len(b)} steps"


def determinism(runs: Path, out: Path, loads: str) -> dict:
    got = {name: _steps(runs / name) for name in ("together_a", "together_b", "alone", "two_threads")}
    pairs = {"two at once (1 thread each)": ("together_a", "together_b"),
             "at once vs alone (1 thread)": ("together_a", "alone"),
             "1 thread vs 2 threads (alone)": ("alone", "two_threads")}
    result = {name: {"identical": _first_difference(got[a], got[b]) is None,
                     "first_difference": _first_difference(got[a], got[b])} for name, (a, b) in pairs.items()}
    return {"what": "the same react_synth run (seed 100, lr 3e-3, 4 steps): training metrics except time/ and "
                    "perf/ compared", "steps": len(got["alone"]), "comparisons": result,
            "loadavg_1min_before_together_alone_end": loads.split(), "provenance": provenance()}


def _untimed(rows: list[dict]) -> list[dict]:
    return [{k: v for k, v in m.items() if not k.startswith(TIMING) and k != "seconds"} for m in rows]


def same_runs(work_a: Path, work_b: Path) -> dict:
    """Each run of work_a against its namesake in work_b: training metrics (timing left out) and every
    held-out evaluation (counts, means, failed scorings) must be identical."""
    runs = {}
    for result in sorted(work_a.glob("*-s*/result.json")):
        a, b = json.loads(result.read_text()), json.loads((work_b / result.parent.name / "result.json").read_text())
        diff = (_first_difference(_untimed(a["train_metrics"]), _untimed(b["train_metrics"]))
                or _first_difference(_untimed(a["evals"]), _untimed(b["evals"])))
        runs[result.parent.name] = {"identical": diff is None, "first_difference": diff,
                                    "train_seconds": [a["train_seconds"], b["train_seconds"]]}
    return {"what": f"the runs of {work_a} against those of {work_b}: training metrics except time/ and perf/, "
                    "and every evaluation except its seconds", "all_identical": all(r["identical"] for r in runs.values()),
            "runs": runs, "provenance": provenance()}


def pilot_facts(run: dict, evals: list[dict], train_metrics: list[dict], rise: float = RISE) -> dict:
    """The rule's facts for one pilot run: its compile curve, grad norms and spec guard."""
    curve = [(int(s), float(v)) for s, v in run["curve"]]
    base, final, best = curve[0][1], curve[-1][1], max(v for _, v in curve)
    finite = all(math.isfinite(m["grad_norm"]) for m in train_metrics if m.get("grad_norm") is not None)
    guard = run.get("guard") or {}
    reached = next((s for s, v in curve if v >= 0.8), None)
    return {"base": base, "final": final, "best": best, "finite": finite, "gamed": bool(guard.get("gamed")),
            "spec_ok_base": guard.get("base"), "spec_ok_min": guard.get("min"), "reached_0.8_at": reached,
            "rises": final >= base + rise, "stays": finite and final >= best - STAY,
            "meets_rule": final >= base + rise and finite and final >= best - STAY and not guard.get("gamed")}


def choose(pilot: Path, out: Path, rise: float = RISE) -> dict:
    facts: dict[str, dict[str, dict]] = {}
    for folder in sorted(pilot.glob("lr*"), key=lambda p: float(p.name[2:])):
        summary = json.loads((folder / "convergence.json").read_text())
        for algo, s in summary["algorithms"].items():
            for seed, run in s["runs"].items():
                result = json.loads((folder / "runs" / f"{algo}-s{seed}" / "result.json").read_text())
                facts.setdefault(algo, {})[folder.name[2:]] = pilot_facts(run, result["evals"],
                                                                          result["train_metrics"], rise)
    chosen = {}
    for algo, by_lr in facts.items():
        ok = [lr for lr, f in by_lr.items() if f["meets_rule"]]
        chosen[algo] = (max(ok, key=float) if ok else
                        max(by_lr, key=lambda lr: by_lr[lr]["final"]) if algo != "grpo" else None)
    go = chosen.get("grpo") is not None
    steps = None
    if go:
        steps = 60 if (facts["grpo"][chosen["grpo"]]["reached_0.8_at"] or 10**9) <= 40 else 100
    return {"rule": f"largest lr whose run rises (final >= base + {rise}), stays finite (finite grad norms, final "
                    f">= best - {STAY}) and is not gamed (spec_ok never more than {GAME_MARGIN} below base)",
            "facts": facts, "chosen_lr": chosen,
            "bot_grpo_by_fallback": bool(chosen.get("bot_grpo")) and not facts["bot_grpo"][chosen["bot_grpo"]]["meets_rule"],
            "go": go, "comparison_steps": steps,
            "by_fallback": {algo: not facts[algo][lr]["meets_rule"] for algo, lr in chosen.items() if lr},
            "provenance": provenance()}


def main(argv: list[str]) -> int:
    mode = argv[0]
    if mode == "read-choice":
        choice = json.loads(Path(argv[1]).read_text())
        if not choice["go"]:
            print("the pilot found no lr at which grpo improves: the comparison is not run", file=sys.stderr)
            return 1
        print(choice["chosen_lr"]["grpo"], choice["chosen_lr"]["bot_grpo"], choice["comparison_steps"])
        return 0
    if mode == "read-sets":
        for algo, lr in json.loads(Path(argv[1]).read_text())["chosen_lr"].items():
            print(f"--algo-set\n{algo}:optim.lr={lr}")
        return 0
    if mode == "same-runs":  # WORK_A WORK_B OUT.json
        out = Path(argv[3])
        record = same_runs(Path(argv[1]), Path(argv[2]))
    elif mode == "determinism":
        out = Path(argv[2])
        record = determinism(Path(argv[1]), out, argv[3])
    else:
        out = Path(argv[2])
        record = choose(Path(argv[1]), out, float(argv[3]) if len(argv) > 3 else RISE)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=1) + "\n")
    print(json.dumps(record.get("comparisons") or record.get("chosen_lr") or record.get("all_identical"), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
