"""A verdict never depends on machine load: the same rollout file scored on a quiet machine and
under CPU-stress load (busy processes, two per core) gets the same statuses and scores.

The deadline is generous so that queueing behind the stress is not what is measured: a request that
does run out of wall time is answered `timeout` (masked), which test_math_backend covers; here every
check must finish, within its CPU-second limit, with the verdict it gets on a quiet machine."""

import json
import os
import subprocess
import sys

import pytest

from math_peer_cases import peer_rows

BUSY = "while True: pass"


def _score(path, out):
    subprocess.run([sys.executable, "-m", "botgrpo_cli", "reward", "score", str(path), "--service", "math",
                    "--output", str(out), "--deadline-ms", "120000"], check=True, capture_output=True, timeout=240)
    return {row["id"]: (row["status"], row.get("score")) for row in map(json.loads, out.read_text().splitlines())}


@pytest.mark.slow
def test_same_verdicts_quiet_and_under_cpu_stress(tmp_path):
    rows = peer_rows()[::2]
    path = tmp_path / "rollouts.jsonl"
    path.write_text("".join(json.dumps({"id": f"r{i}", "prompt": "", "completion": completion,
                                        "reference": {"answer": gold}, "options": {"steps": True}}) + "\n"
                            for i, (_, gold, completion, _) in enumerate(rows)))
    quiet = _score(path, tmp_path / "quiet.jsonl")
    busy = [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(2 * (os.cpu_count() or 2))]
    try:
        loaded = _score(path, tmp_path / "loaded.jsonl")
    finally:
        for p in busy:
            p.kill()
            p.wait()
    assert all(status == "ok" for status, _ in quiet.values())
    assert loaded == quiet
