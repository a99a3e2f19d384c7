"""The real react service process (`python -m botgrpo_rewards react`, Node inside) over stdin/stdout,
scoring the example rollouts pipelined."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "rollouts" / "react.jsonl"

# What each example rollout is: (syntax_ok, types_ok) and the text its first span starts with.
EXPECTED = {
    "react-counter": (1, 1, None),
    "react-todo": (1, 1, None),
    "react-greeting-fr": (1, 1, None),
    "react-card-unclosed": (0, 0, "div>"),
    "react-toggle-arrow": (0, 0, "="),
    "react-timer-truncated": (0, 0, "span"),
    "react-price-type": (1, 0, "cents"),
    "react-search-state": (1, 0, "e.target.value.length"),
    "react-fetch-import": (1, 0, "'axios'"),
    "react-no-code": (0, 0, None),
}


def test_service_scores_example_rollouts():
    rollouts = [json.loads(line) for line in EXAMPLES.read_text(encoding="utf-8").splitlines()]
    assert {r["id"] for r in rollouts} == set(EXPECTED)
    proc = subprocess.Popen([sys.executable, "-m", "botgrpo_rewards", "react"], cwd=ROOT,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        hello = json.loads(proc.stdout.readline())
        assert hello["op"] == "hello" and hello["service"] == "react"
        lines = [{"v": 1, "op": "score", "deadline_ms": 30_000, **r} for r in rollouts]
        lines.append({"v": 1, "op": "score", "id": "bad-option", "completion": "x", "options": {"K": 3}})
        lines.append({"v": 1, "op": "ping", "id": "p"})
        proc.stdin.write("".join(json.dumps(m) + "\n" for m in lines).encode())
        proc.stdin.flush()
        got = {}
        while len(got) < len(lines):
            msg = json.loads(proc.stdout.readline())
            got[msg["id"]] = msg
        proc.stdin.write(b'{"v": 1, "op": "shutdown"}\n')
        proc.stdin.flush()
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    by_id = {r["id"]: r["completion"] for r in rollouts}
    for rid, (syntax_ok, types_ok, span_text) in EXPECTED.items():
        resp = got[rid]
        assert resp["status"] == "ok", resp
        assert (resp["metrics"]["syntax_ok"], resp["metrics"]["types_ok"]) == (syntax_ok, types_ok), (rid, resp)
        assert resp["metrics"]["compile"] == syntax_ok * types_ok, (rid, resp)
        if span_text is None:
            assert resp["spans"] == [], (rid, resp)
        else:
            first = resp["spans"][0]
            assert by_id[rid][first["start"]:first["end"]].startswith(span_text), (rid, resp)
    assert got["bad-option"]["status"] == "error" and "K" in got["bad-option"]["error"]["message"]
    assert got["p"]["op"] == "pong"


def test_revise_corpus_rejections_are_the_services_first_diagnostic(react_pool):
    """The revise warm start's rejection texts come from the react service, as a run's repair turn shows them."""
    from botgrpo_cli.turns.feedback import service_rejections
    from botgrpo_tasks import get_task
    from botgrpo_tasks.react_synth import REPAIR_REQUEST, reference_row
    from botgrpo_tasks.react_synth_grammar import render

    task = get_task("react_synth", revise=True)
    faulty = [it for it in task.corpus_items(40) if it.faults][:4]
    items = [(reference_row(it.spec), render(it.spec, it.faults)) for it in faulty]
    messages = service_rejections(task, react_pool)(items)
    assert len(messages) == 4
    for message in messages:
        # the default faults are syntax faults: esbuild's words, line and column, as a run shows them
        assert message.startswith("The checker rejected it: line ") and message.endswith(f" (syntax). {REPAIR_REQUEST}")
    # ... and the bootstrap asks for them for the revise variant only
    from botgrpo_cli.bootstrap.build import _corpus_extras

    assert _corpus_extras(get_task("react_synth")) == {} == _corpus_extras(get_task("arith_synth"))
    assert callable(_corpus_extras(task)["reject"])
