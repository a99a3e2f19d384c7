"""The render backend behind the shared service runner, as a real subprocess speaking protocol v1."""

from __future__ import annotations

import json
import subprocess
import sys
import time

REF = "export default function App() { return <h1>Hello</h1>; }"


def test_service_answers_ok_and_timeout():
    proc = subprocess.Popen([sys.executable, "-m", "botgrpo_rewards", "render"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        hello = json.loads(proc.stdout.readline())
        assert hello["service"] == "render" and "render" in hello["capabilities"]
        requests = [
            {"v": 1, "op": "score", "id": "loop", "completion": "export default function App() { for (;;) {} }",
             "reference": {"reference_code": REF}, "deadline_ms": 1500},
            {"v": 1, "op": "score", "id": "ok", "completion": REF, "reference": {"reference_code": REF}},
        ]
        t0 = time.monotonic()
        for r in requests:
            proc.stdin.write(json.dumps(r) + "\n")
        proc.stdin.flush()
        got = {}
        for _ in requests:
            msg = json.loads(proc.stdout.readline())
            got[msg["id"]] = (msg, time.monotonic() - t0)
        assert got["loop"][0]["status"] == "timeout" and got["loop"][1] < 30  # the loop never ends: not hung
        assert got["ok"][0]["status"] == "ok" and got["ok"][0]["score"] == 1.0
        assert got["ok"][0]["metrics"] == {"rendered": 1.0, "similarity": 1.0}
        proc.stdin.write('{"v": 1, "op": "shutdown"}\n')
        proc.stdin.flush()
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
