"""The tsgo type checker gives the diagnostics TypeScript 5.9 gives, on a deterministic corpus of
800+ files: react_synth grammar programs (valid and with each syntax fault), the real `react`
components, 50-65-line components, type-error mutations of all of them in the ways small models
get types wrong, cut-off completions, `declare` / `///` cases and hostile paths. A diagnostic is
(category, code, start, length, first message line), from rewards/react/equality.js.

TypeScript 5.9's answers are kept in tests/data/react_ts5_diagnostics.json (its checker is ~10x
slower; it is pinned, and a live sample of the corpus must still give exactly them); tsgo runs live
on the whole corpus. Three differences of tsgo 7.0.0-dev are known and allowed, nothing else (so a
tsgo version bump that changes any other diagnostic fails here):
- messages list an object type's members in another order (`{ tooltip: string; children: ... }`);
- a misspelt capitalised name used as a receiver (`{Trail.map(...)}` beside `trail`) is TS2552
  "Cannot find name 'Trail'. Did you mean 'trail'?" where TypeScript 5.9 says TS2304 "Cannot find
  name 'Trail'." (same span: the reward is the same, the span's label differs);
- TS6053 (a `/// <reference path>` file not found) quotes the path as written, not resolved.
After a change of the corpus, rewrite the kept answers: python tests/integration/test_react_tsgo_equality.py
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest

from botgrpo_rewards.react.bench import component
from botgrpo_rewards.react.checker import HERE
from botgrpo_tasks.react import load_specs
from botgrpo_tasks.react_synth import draw_specs
from botgrpo_tasks.react_synth_grammar import FAULTS, render

TSGO = HERE / "node_modules" / "@typescript" / "native-preview"
KEPT = Path(__file__).resolve().parents[1] / "data" / "react_ts5_diagnostics.json"
LIVE_SAMPLE = 24  # files TypeScript 5.9 checks live (besides every declare / `///` case)
needs_tsgo = pytest.mark.skipif(not TSGO.is_dir(), reason="tsgo is not installed (npm ci in rewards/react)")

# Ways a model gets types wrong, each a text edit that applies to most components (None: not here).
MUTATIONS = {
    "number for string": lambda c, r: c.replace(': string', ': number', 1) if ': string' in c else None,
    "wrong literal": lambda c, r: _inside_body(c, '  const __wrong: number = "text";\n'),
    "unknown name": lambda c, r: _rename_use(c, r),
    "unknown attribute": lambda c, r: c.replace("<div", '<div tooltip="x"', 1) if "<div" in c else None,
    "bad attribute type": lambda c, r: c.replace("<button", "<button disabled={1}", 1) if "<button" in c else None,
    "method on number": lambda c, r: _inside_body(c, "  const __n = 3;\n  __n.toUpperCase();\n"),
    "missing import": lambda c, r: c.replace("import { useState } from", "import { } from", 1)
    if "import { useState } from" in c else None,
    "other module": lambda c, r: "import _ from 'lodash';\n" + c,
    "cut off": lambda c, r: c[: r.randrange(len(c) // 3, len(c))],
}


def _inside_body(code: str, line: str) -> str | None:
    """`line` inserted as the first statement of the first function body."""
    at = code.find(") {\n")
    return None if at < 0 else code[: at + 4] + line + code[at + 4:]


def _rename_use(code: str, rng: random.Random) -> str | None:
    """One use of a state or prop name inside JSX braces misspelled (a "did you mean" diagnostic)."""
    uses = [i for i in range(len(code)) if code[i] == "{" and code[i + 1: i + 2].isalpha()]
    if not uses:
        return None
    at = rng.choice(uses) + 1
    return code[:at] + code[at].swapcase() + code[at + 1:]


def _long(programs: list[str]) -> str:
    """Several components in one 50-65-line file, one import line for all."""
    body = "\n".join(line for p in programs for line in p.splitlines() if not line.startswith("import "))
    return "import { useState } from 'react';\n\n" + body + "\n"


SHARED_SCOPE = [
    "declare global { interface Window { appName: string } }\nexport function A() { return <p>{window.appName}</p>; }\n",
    "declare global { var counter: number }\nexport function B() { const s: string = counter; return <p>{s}</p>; }\n",
    "declare module 'react' { interface HTMLAttributes<T> { tooltip?: string } }\n"
    "export function C() { return <div tooltip=\"x\" />; }\n",
    "declare module 'lodash' { export function chunk<T>(a: T[], n: number): T[][] }\n"
    "import { chunk } from 'lodash';\nexport function D() { return <ul>{chunk([1], 1).map((c) => <li key={c[0]}>{c}</li>)}</ul>; }\n",
    "declare const title: number;\nexport function E() { const t: string = title; return <h1>{t}</h1>; }\n",
    '/// <reference types="react" />\nexport function F() { return <div>{missing}</div>; }\n',
    '/// <reference lib="es2022" />\nexport function G() { return <p>{[1, 2].at(-1)}</p>; }\n',
    '/// <reference path="./other.d.ts" />\nexport function H() { return <p>{other}</p>; }\n',
    '/// <reference path="/etc/passwd" />\nexport function I() { return <p />; }\n',
    "declare namespace JSX { interface IntrinsicElements { blink: {} } }\nexport function J() { return <blink />; }\n",
]
HOSTILE = [
    "type T = typeof import('/etc/hostname');\nexport function K() { const t: T = null as any; return <p>{String(t)}</p>; }\n",
    "import data from '../../package.json';\nexport function L() { return <p>{data.name}</p>; }\n",
    "import x from '/etc/passwd';\nexport function M() { return <p>{x}</p>; }\n",
    "export * from '../checker.js';\nexport function N() { return <p />; }\n",
]


def corpus() -> list[str]:
    rng = random.Random("tsgo-equality")
    specs = draw_specs(0, 110, "train")
    grammar = [render(s) for s in specs]
    faulty = [render(s, frozenset([f])) for s in specs[:56] for f in sorted(FAULTS) if f in _faults_for(s)]
    real = [s.code for s in load_specs()]
    long = [_long(grammar[i: i + 4]) for i in range(0, 88, 4)] + [_long(real[i: i + 2]) for i in range(0, 24, 2)]
    bench = [component(i).split("```tsx\n")[1].split("```")[0] for i in range(30)]
    base = grammar + real + long + bench
    mutated = []
    for k, code in enumerate(base):
        name = sorted(MUTATIONS)[k % len(MUTATIONS)]
        for kind in (name, sorted(MUTATIONS)[(k * 7 + 3) % len(MUTATIONS)]):
            out = MUTATIONS[kind](code, rng)
            if out is not None and out != code:
                mutated.append(out)
    return list(dict.fromkeys(base + faulty[:60] + mutated + SHARED_SCOPE + HOSTILE))  # distinct, in order


def _faults_for(spec) -> set[str]:
    from botgrpo_tasks.react_synth_grammar import constructs

    have = constructs(spec)
    return {f for f, where in FAULTS.items() if where in have}


def test_the_corpus_is_big_and_varied():
    files = corpus()
    assert len(files) >= 500 and len(set(files)) == len(files)
    assert sum(1 for f in files if "declare" in f or "///" in f) >= 10
    assert sum(1 for f in files if f.count("\n") >= 50) >= 30


def diagnostics(files: list[str], checker: str, tmp: Path) -> dict:
    """equality.js's answer: {checker, version, diagnostics: one list of strings per file}."""
    path = tmp / f"corpus-{checker}.json"
    path.write_text(json.dumps(files), encoding="utf-8")
    run = subprocess.run(["node", str(HERE / "equality.js"), str(path), checker], capture_output=True, text=True,
                         timeout=600, cwd=HERE, check=False)
    assert run.returncode == 0, run.stderr[-2000:]
    return json.loads(run.stdout)


def digest(files: list[str]) -> str:
    return hashlib.sha256(json.dumps(files).encode()).hexdigest()


def members_sorted(text: str) -> str:
    """`text` with the members of every object type `{ a: A; b: B; }` sorted, nested ones too."""
    out: list[list[str]] = [[]]  # per open brace: the text so far
    for ch in text:
        if ch == "{":
            out.append([])
        elif ch == "}" and len(out) > 1:
            inner = "".join(out.pop()).strip()
            members = sorted(m.strip() for m in _top_level_split(inner.rstrip(";")) if m.strip())
            out[-1].append("{ " + "; ".join(members) + "; }" if members else "{}")
        else:
            out[-1].append(ch)
    return "".join(out[0]) + "".join("{" + "".join(o) for o in out[1:])


def _top_level_split(text: str) -> list[str]:
    """`text` split at the `;` outside brackets, braces and parentheses (the `>` of `=>` is no bracket)."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "([<{":
            depth += 1
        elif ch in ")]}" or (ch == ">" and text[i - 1: i] != "="):
            depth -= 1
        elif ch == ";" and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    return parts + [text[start:]]


_NO_SUGGESTION = re.compile(r"^1 TS2304 (\d+\+\d+) Cannot find name '(\w+)'\.$")
_SUGGESTION = re.compile(r"^1 TS2552 (\d+\+\d+) Cannot find name '(\w+)'\. Did you mean '(\w+)'\?$")
_REFERENCE = re.compile(r"^1 TS6053 (\d+\+\d+) File '.*' not found\.$")


def known_difference(ts5: str, tsgo: str) -> str | None:
    """Which allowed difference (module docstring) turns `ts5` into `tsgo`, or None."""
    if members_sorted(ts5) == members_sorted(tsgo):
        return "member order"
    a, b = _NO_SUGGESTION.match(ts5), _SUGGESTION.match(tsgo)
    if a and b and a.groups() == b.groups()[:2] and b.group(3).lower() == a.group(2).lower():
        return "suggestion"
    a, b = _REFERENCE.match(ts5), _REFERENCE.match(tsgo)
    if a and b and a.group(1) == b.group(1):
        return "reference path"
    return None


@needs_tsgo
def test_tsgo_diagnostics_equal_typescript_5_9(tmp_path):
    files = corpus()
    kept = json.loads(KEPT.read_text(encoding="utf-8"))
    assert kept["corpus_sha256"] == digest(files), f"the corpus changed: run python {Path(__file__).relative_to(Path.cwd())}"
    ts5 = kept["diagnostics"]
    tsgo = diagnostics(files, "tsgo", tmp_path)["diagnostics"]
    assert sum(map(bool, ts5)) >= 400 and sum(map(len, ts5)) >= 800  # most files have diagnostics to compare
    known: dict[str, int] = {}
    for i, (a, b) in enumerate(zip(ts5, tsgo)):
        assert len(a) == len(b), f"file {i}: TypeScript 5.9 {a} / tsgo {b}\n{files[i]}"
        for x, y in zip(a, b):
            if x != y:
                kind = known_difference(x, y)
                assert kind is not None, f"file {i}: TypeScript 5.9 {x!r} / tsgo {y!r}\n{files[i]}"
                known[kind] = known.get(kind, 0) + 1
    assert sum(known.values()) <= 0.07 * sum(map(len, ts5)), known


def test_typescript_5_9_still_gives_the_kept_answers(tmp_path):
    """The kept answers are TypeScript 5.9's today: every declare / `///` file and a sample, live."""
    files = corpus()
    kept = json.loads(KEPT.read_text(encoding="utf-8"))
    assert kept["typescript"] == json.loads((HERE / "package.json").read_text())["dependencies"]["typescript"]
    pick = sorted({i for i, f in enumerate(files) if "declare" in f or "///" in f}
                  | set(random.Random(0).sample(range(len(files)), LIVE_SAMPLE)))
    live = diagnostics([files[i] for i in pick], "ts5", tmp_path)
    assert live["version"] == kept["typescript"]
    assert live["diagnostics"] == [kept["diagnostics"][i] for i in pick]


@needs_tsgo
def test_the_installed_tsgo_is_the_pinned_one():
    """The harness vouches for one version: package.json's pin, which npm ci installs."""
    pinned = json.loads((HERE / "package.json").read_text())["optionalDependencies"]["@typescript/native-preview"]
    lock = json.loads((HERE / "package-lock.json").read_text())
    assert lock["packages"]["node_modules/@typescript/native-preview"]["version"] == pinned
    assert json.loads((TSGO / "package.json").read_text())["version"] == pinned


if __name__ == "__main__":  # rewrite the kept TypeScript 5.9 answers (after a change of the corpus)
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        files = corpus()
        answer = diagnostics(files, "ts5", Path(tmp))
    KEPT.write_text(json.dumps({"corpus_sha256": digest(files), "typescript": answer["version"],
                                "diagnostics": answer["diagnostics"]}, separators=(",", ":")) + "\n", encoding="utf-8")
    print(f"wrote {KEPT} ({len(files)} files)", file=sys.stderr)
