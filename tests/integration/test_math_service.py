"""The real math service process (`python -m botgrpo_rewards math`) spoken to over stdin/stdout."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "rollouts" / "math.jsonl"


@pytest.fixture(scope="module")
def service():
    proc = subprocess.Popen([sys.executable, "-m", "botgrpo_rewards", "math"], cwd=ROOT,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    hello = json.loads(proc.stdout.readline())
    assert hello["op"] == "hello" and hello["service"] == "math" and "steps" in hello["capabilities"]
    yield proc
    if proc.poll() is None:
        proc.kill()
        proc.wait()


def exchange(proc, requests):
    """Send all requests pipelined, then read one line per request; returns {id: response}."""
    for req in requests:
        proc.stdin.write((json.dumps(req) + "\n").encode())
    proc.stdin.flush()
    out = {}
    while len(out) < len(requests):
        msg = json.loads(proc.stdout.readline())
        out[msg["id"]] = msg
    return out


def test_scores_pipelined_requests_including_hostile_ones(service, tmp_path):
    pwned = tmp_path / "pwned"
    reqs = [
        {"v": 1, "op": "score", "id": "ok", "completion": "so $\\boxed{033}$", "reference": {"answer": "33"}},
        {"v": 1, "op": "score", "id": "frac", "completion": "\\boxed{\\frac{\\sqrt2}{2}}", "reference": {"answer": "1/sqrt(2)"}},
        {"v": 1, "op": "score", "id": "inj", "completion": f"\\boxed{{__import__('os').system('touch {pwned}')}}",
         "reference": {"answer": "0"}},
        {"v": 1, "op": "score", "id": "tower", "completion": "\\boxed{10^{10^{10^{10}}}}", "reference": {"answer": "1"}},
        {"v": 1, "op": "score", "id": "slow", "completion": "\\boxed{(a+b+c+d+e)^{100}}", "reference": {"answer": "1"},
         "deadline_ms": 8000},
        {"v": 1, "op": "score", "id": "big", "completion": "\x00\ud800 " * 300_000 + "\\boxed{7}", "reference": {"answer": "7"},
         "options": {"steps": True}},
        {"v": 1, "op": "score", "id": "surrogate", "completion": "\\boxed{\ud800\x00}", "reference": {"answer": "1"}},
        {"v": 1, "op": "score", "id": "noref", "completion": "\\boxed{1}", "reference": {}},
    ]
    start = time.monotonic()
    got = exchange(service, reqs)
    assert time.monotonic() - start < 40  # the 8 s deadline held (a hang would not end), with room for a busy machine
    assert got["ok"]["score"] == 1.0 and got["ok"]["spans"][0]["reward"] == 1.0
    assert got["frac"]["score"] == 1.0
    for rid in ("inj", "tower", "slow", "surrogate"):
        assert got[rid]["status"] == "ok" and got[rid]["score"] == 0.0, got[rid]
    assert got["big"]["score"] == 1.0
    assert got["noref"]["status"] == "error" and "answer" in got["noref"]["error"]["message"]
    assert not pwned.exists()
    assert exchange(service, [{"v": 1, "op": "ping", "id": "p"}])["p"]["op"] == "pong"


# id -> (score, steps_wrong, span labels) a careful grader gives the example rollouts
# (step_ok: a step whose closed-form equalities are verified true and grounded: their operands are the
# prompt's numbers or earlier grounded results; no answer scores missing_score -1). Not grounded, so no
# credit: aime-2 (the factorisation brings in 2, 4, 3 and the divisor formula's 1s), arith-3 step 2
# (13 is the false step's result), frac-1 (the common denominator 6 is not the problem's).
OK = "step_ok"
EXPECTED = {
    "aime-1": (1.0, 0, ["answer"]), "aime-2": (1.0, 0, ["answer"]), "aime-3": (0.0, 1, ["step", "answer"]),
    "arith-1": (1.0, 0, [OK, OK, "answer"]), "arith-2": (0.0, 1, [OK, "step", "answer"]),
    "arith-3": (1.0, 1, ["step", "answer"]), "frac-1": (1.0, 0, ["answer"]), "frac-2": (0.0, 1, ["step", "answer"]),
    "roots-1": (1.0, 0, ["answer"]), "hedge-1": (-1.0, 0, ["no_answer"]), "none-1": (-1.0, 0, ["no_answer"]),
    "geo-1": (1.0, 0, [OK, "answer"]), "pct-1": (1.0, 0, [OK, "answer"]),
}


def test_example_rollouts_score_as_labelled(service):
    rows = [json.loads(line) for line in EXAMPLES.read_text().splitlines() if line.strip()]
    assert sorted(r["id"] for r in rows) == sorted(EXPECTED)
    got = exchange(service, [{"v": 1, "op": "score", **row} for row in rows])
    for row in rows:
        resp = got[row["id"]]
        assert resp["status"] == "ok", resp
        labels = [s["label"] for s in resp["spans"]]
        assert (resp["score"], resp["metrics"]["steps_wrong"], labels) == EXPECTED[row["id"]], (row["id"], resp)


def test_shutdown_exits_zero(service):
    service.stdin.write(b'{"v":1,"op":"shutdown"}\n')
    service.stdin.flush()
    assert service.wait(timeout=15) == 0
