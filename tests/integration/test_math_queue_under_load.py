"""Machine load must not turn into timeouts (issue 26): beside CPU hogs this test starts itself, a
500-line file scored at the default deadline comes back with no `timeout` at all, because a
request's deadline measures its own work (from when a checker process starts its job), never the
wait for a free checker process."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

# Each hog ends by itself after 150 s even if the test is killed; the test kills them sooner.
HOG = "import time\nend = time.monotonic() + 150\nwhile time.monotonic() < end: pass"
HOGS = 4


def _line(i: int) -> str:
    k = i + 2  # a polynomial answer: every line needs a sympy check in a checker process (tens of ms)
    return json.dumps({"id": f"q{i}", "completion": f"Expanding, the answer is $\\boxed{{x^2+{2 * k}x+{k * k}}}$.",
                       "reference": {"answer": f"(x+{k})^2"}})


@pytest.mark.slow
def test_no_timeouts_at_the_default_deadline_beside_cpu_hogs(tmp_path):
    source, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    source.write_text("".join(_line(i) + "\n" for i in range(500)))
    hogs = [subprocess.Popen([sys.executable, "-c", HOG]) for _ in range(HOGS)]
    try:
        proc = subprocess.run([sys.executable, "-m", "botgrpo_cli", "reward", "score", str(source), "--service", "math",
                               "--workers", "2", "-o", str(out)], capture_output=True, text=True, timeout=300,
                              env={**os.environ, "COLUMNS": "200"})
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    statuses = {r["status"] for r in rows}
    assert len(rows) == 500 and statuses == {"ok"}, [r["error"] for r in rows if r["status"] != "ok"][:3]
    assert all(r["score"] == 1.0 for r in rows)
