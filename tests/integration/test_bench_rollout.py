"""`botgrpo bench rollout` end to end at a toy shape: both engines timed, greedy equality reported."""

from __future__ import annotations

import subprocess
import sys


def test_bench_rollout_prints_both_engines_and_greedy_equality(tiny_arith_model_dir):
    """--bf16 on times bf16 autocast beside fp32 on any CPU (emulated where it is not native)."""
    proc = subprocess.run([sys.executable, "-m", "botgrpo_cli", "bench", "rollout", "--task", "arith_synth",
                           "--prompts", "2", "--group", "2", "--new-tokens", "6", "--repeats", "1", "--threads", "1",
                           "--bf16", "on"],
                          capture_output=True, text=True, timeout=280)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "hf generate" in proc.stdout and "botgrpo fast" in proc.stdout
    assert "greedy rows equal: yes" in proc.stdout
    assert "bf16 autocast vs fp32: mean |log-prob difference|" in proc.stdout
