"""botgrpo_cli shortens OpenMP's idle spin (GOMP_SPINCOUNT=1000) before torch loads libgomp, unless
the user chose a wait policy or spin count.

Checked against libgomp itself: OMP_DISPLAY_ENV=verbose makes it print its settings when torch
loads it (libgomp's own default is 300000 spins; PASSIVE is 0)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

PROBE = "import botgrpo_cli, torch; torch.ones(4).sum()"


def _spin_count(**env: str) -> str:
    # a fresh shell's environment: no policy, and no LD_PRELOAD (vLLM's CPU engine, started by another
    # test in this process, preloads libgomp for children, which then reads its settings before Python runs)
    clean = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "LD_PRELOAD")}
    proc = subprocess.run([sys.executable, "-c", PROBE], env={**clean, "OMP_DISPLAY_ENV": "verbose", **env},
                          capture_output=True, text=True, timeout=120, check=True)
    line = next(x for x in proc.stderr.splitlines() if x.strip().startswith("GOMP_SPINCOUNT"))
    return line.split("=")[1].strip().strip("'")


@pytest.mark.slow  # a fresh Python with torch per case: seconds; in make test, not make test-unit
@pytest.mark.parametrize(("env", "expected"), [
    ({}, "1000"),  # ours: a short spin, then sleep
    ({"OMP_WAIT_POLICY": "PASSIVE"}, "0"),  # the user's choice is kept
    ({"OMP_WAIT_POLICY": "ACTIVE"}, "30000000000"),  # the user's choice is kept
    ({"GOMP_SPINCOUNT": "5000"}, "5000"),
])
def test_wait_policy_reaches_libgomp(env, expected):
    assert _spin_count(**env) == expected
