"""scripts/gpu_replicate.sh, the GPU replication of the paper's React claim, runs on CPU for one
step (SMOKE=1) with the same script: the real SmolLM2 model, the `react` task, the `types_ok` metric.
One preset (bot_grpo) here: a bench of several presets side by side is test_bench_convergence's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# A couple of minutes on a busy 2-core machine; the limit leaves room for one much busier.
pytestmark = [pytest.mark.real_model, pytest.mark.timeout(1500)]


def test_the_replication_script_runs_one_step_on_cpu(smollm2_gguf, tmp_path):
    out = tmp_path / "gpu_react"
    env = {**os.environ, "SMOKE": "1", "PY": sys.executable, "OUT": str(out), "ALGOS": "bot_grpo"}
    proc = subprocess.run(["bash", str(ROOT / "scripts" / "gpu_replicate.sh")], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    summary = json.loads((out / "convergence.json").read_text())
    assert summary["task"] == "react" and summary["metric"] == "types_ok"
    assert set(summary["algorithms"]) == {"bot_grpo"}
    assert summary["base_model"] != "" and "react_synth-tiny" not in summary["base_model"]  # the real model
    for entry in summary["algorithms"].values():
        steps = [step for step, _ in entry["runs"]["0"]["curve"]]
        assert steps == [0, 1]
