"""The repair plan's prerequisite (research/preregistration/react_synth_repair_turns.md): on the warm
start of its task options, how many second attempts pass every check? Builds (or finds) the warm start,
runs the plan's measuring command (`botgrpo eval`, 32 eval prompts x 2, two turns, T=1, seed 1) and
writes the counts with the commit and load.

    BOTGRPO_CACHE=.cache/botgrpo .venv/bin/python research/scripts/repair_prerequisite.py \
        research/results/react_repair/prerequisite.json
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from botgrpo_cli.bench.provenance import provenance
from botgrpo_cli.bootstrap import bootstrap
from botgrpo_cli.bootstrap.build import read_info
from botgrpo_tasks import get_task

OPTIONS = {"sites": 2, "revise": True}
NEEDED = 0.1  # the plan: second attempts pass every check in at least a tenth of the revised trajectories


def main() -> None:
    out = Path(sys.argv[1])
    model = bootstrap(get_task("react_synth", **OPTIONS))
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [str(Path(sys.executable).with_name("botgrpo")), "eval", "--task", "react_synth", "--model", str(model),
               "--out", tmp, *(a for k, v in OPTIONS.items() for a in ("--task-option", f"{k}={json.dumps(v)}")),
               "--max-turns", "2", "--n", "2", "--limit", "32", "--max-new-tokens", "128", "--seed", "1",
               "--temperature", "1.0", "--no-render", "--threads", "1"]
        subprocess.run(cmd, check=True)
        problems = json.loads((Path(tmp) / "eval.json").read_text())["evaluations"][-1]["problems"]
    samples = [s for p in problems for s in p["samples"]]
    revised = [s for s in samples if s["turns"] >= 2]
    passed = sum(bool(s["success"]) for s in revised)
    record = {"what": "second attempts of the revise warm start that pass every check (all_ok)",
              "task_options": OPTIONS, "model": Path(model).name, "warm_start": {
                  k: read_info(model).get(k) for k in ("base_success_rate", "base_metrics", "recipe_hash")},
              "command": " ".join(cmd[1:]).replace(tmp, "TMP"), "trajectories": len(samples),
              "revised": len(revised), "second_attempt_passed": passed,
              "share": passed / len(revised) if revised else None, "needed": NEEDED,
              "met": bool(revised) and passed / len(revised) >= NEEDED, "provenance": provenance()}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=1) + "\n")
    print(json.dumps({k: record[k] for k in ("trajectories", "revised", "second_attempt_passed", "met")}))


if __name__ == "__main__":
    main()
