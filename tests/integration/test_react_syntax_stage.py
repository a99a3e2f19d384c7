"""checker.js overlaps its syntax stage (esbuild's async API, the whole batch at once) with an early
type stage; the answers must be exactly those of the stages in sequence, as before: esbuild's
`transformSync` per snippet, then the type stage on what it accepts. Both on the equality test's
corpus plus syntax-error cases (cut-off files, line breaks esbuild counts, non-ASCII text before the
error, the end-of-file note rule), through rewards/react/equality.js (real esbuild, real checker)."""

from __future__ import annotations

import json
import os
import random
import subprocess
from pathlib import Path

from test_react_tsgo_equality import corpus

from botgrpo_rewards.react.checker import HERE

ODD = [
    "",
    "export function A() { return <div>",
    "export function A() {\r\n  return <div>\r\n    <p>x</div>;\r\n}\r\n",
    "export function A() {\r  return <p>{'é'}</span>;\r}\r",
    "export function A() {\u2028  return <p>x</q>;\u2029}\n",
    "// 💥 naïve\nexport function A() { const s = '日本'; return <p>{s}</b>; }\n",
    "export function A() { const s = '\ud800'; return <p>{s}</i>; }\n",  # a lone surrogate
    "export function A() { return <ul>{[1].map((i) => <li key={i}>{i}</li>)}</ul>; ",
    "export function A() { const s = `unterminated ${1}",
    "export function A() { return <div className=\"x>y</div>; }\n",
    "\t\texport function A() { return <>\n<p>x</p>\n",
]


def syntax_corpus() -> list[str]:
    """The equality corpus, cut-off copies of some of it, and ODD."""
    rng = random.Random("syntax-stage")
    files = corpus()
    cut = [f[: rng.randrange(1, len(f))] for f in rng.sample(files, 150)]
    return list(dict.fromkeys(files + cut + ODD))


def run_stages(files: list[str], tmp: Path) -> dict:
    path = tmp / "corpus.json"
    path.write_text(json.dumps(files), encoding="utf-8")
    run = subprocess.run(["node", str(HERE / "equality.js"), str(path), "stages"], capture_output=True, text=True,
                         timeout=900, cwd=HERE, check=False, env={**os.environ, "BOTGRPO_REACT_WARMUP_ROUNDS": "1"})
    assert run.returncode == 0, run.stderr[-2000:]
    return json.loads(run.stdout)


def test_overlapped_stages_answer_as_the_stages_in_sequence(tmp_path):
    files = syntax_corpus()
    got = run_stages(files, tmp_path)
    overlapped, sequence = got["overlapped"], got["in_sequence"]
    assert len(overlapped) == len(sequence) == len(files)
    with_syntax = sum(1 for r in sequence if r.get("syntax"))
    typed = sum(1 for r in sequence if r.get("types"))
    assert with_syntax >= 250 and typed >= 250  # both kinds are well represented
    for i, (a, b) in enumerate(zip(overlapped, sequence)):
        assert a == b, f"file {i} ({got['checker']}): overlapped {a}\nin sequence {b}\n{files[i]!r}"
