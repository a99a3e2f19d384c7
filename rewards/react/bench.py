"""`botgrpo bench rewards --service react`: the warm Node checker against spawning `tsc --noEmit`.

One ReactBackend (one Node process) scores `n` generated completions (valid, syntax errors, type
errors; distinct names and numbers so nothing repeats) after a warm-up, first syntax only, then
syntax + types, then syntax + types with 8 and with MAX_BATCH (64) requests in flight (batched, as a
training step hands them over), then bursts of 64 (one step's completions); per-check latency
is measured around `ReactBackend.score`. In the same run,
`node_modules/.bin/tsc --noEmit` (same compiler options) is spawned on one such file a few times.
With `workers` > 1, that many backends also score in parallel threads for aggregate throughput.
Each figure is measured for both type checkers (TypeScript 5.9, and tsgo when installed), side by side.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from rich.console import Console
from rich.table import Table

from botgrpo_rewards.protocol import ScoreRequest
from botgrpo_rewards.react.checker import MAX_BATCH, tsgo_installed
from botgrpo_rewards.react.node_home import node_home
from botgrpo_rewards.react.service import ReactBackend

TSC_REPEATS = 3
WARM_UP = 20
STEP, STEPS = 64, 5  # a training step's completions, handed over at once
TSCONFIG = {
    "compilerOptions": {
        "strict": True, "jsx": "react-jsx", "target": "es2020", "module": "esnext", "moduleResolution": "bundler",
        "moduleDetection": "force", "lib": ["es2020", "dom", "dom.iterable"], "types": [], "noEmit": True,
        "skipLibCheck": True, "esModuleInterop": True,
    },
    "files": ["component.tsx"],
}


def component(i: int) -> str:
    """The i-th completion: a stateful list component; every 3rd has a syntax error, every 3rd+1 a type error."""
    setter = f"setItems([...items, 'item {i}'])" if i % 3 != 1 else f"setItems({i})"
    close = "</ul>" if i % 3 != 2 else "</ol>"
    code = (
        "import { useState } from 'react';\n\n"
        f"interface Props{i} {{\n  title: string;\n  limit?: number;\n}}\n\n"
        f"export function List{i}({{ title, limit = {i % 7 + 3} }}: Props{i}) {{\n"
        f"  const [items, setItems] = useState<string[]>(['first {i}']);\n"
        "  return (\n    <section>\n      <h2>{title}</h2>\n"
        f"      <ul>{{items.slice(0, limit).map((s) => <li key={{s}}>{{s}}</li>)}}{close}\n"
        f"      <button onClick={{() => {setter}}}>Add</button>\n    </section>\n  );\n}}\n"
    )
    return f"Here is the component.\n\n```tsx\n{code}```\n"


def _latencies(backend: ReactBackend, n: int, types: bool, offset: int) -> list[float]:
    """Seconds per check for completions offset .. offset+n-1."""
    out = []
    for i in range(offset, offset + n):
        request = ScoreRequest(id=str(i), completion=component(i), options={"types": types})
        t0 = time.perf_counter()
        backend.score(request, time.monotonic() + 60)
        out.append(time.perf_counter() - t0)
    return out


def _timed(backend: ReactBackend, n: int, types: bool, offset: int) -> tuple[list[float], float | None]:
    """Latencies, and the CPU seconds per check of this process plus Node (None off Linux)."""
    cpu0, node0 = time.process_time(), backend.node_cpu_seconds()
    lat = _latencies(backend, n, types, offset)
    node1 = backend.node_cpu_seconds()
    cpu = None if node0 is None or node1 is None else (time.process_time() - cpu0 + node1 - node0) / n
    return lat, cpu


def _batched(backend: ReactBackend, n: int, offset: int, inflight: int = 8) -> tuple[float, float | None]:
    """Wall and CPU (Python + Node + tsgo) seconds per completion with `inflight` requests waiting at once,
    as a training step hands them over: Node gets them in batches that share one TypeScript checker."""
    cpu0, node0 = time.process_time(), backend.node_cpu_seconds()
    t0 = time.perf_counter()
    with ThreadPoolExecutor(inflight) as pool:
        list(pool.map(lambda i: backend.score(ScoreRequest(id=str(i), completion=component(i)), time.monotonic() + 60),
                      range(offset, offset + n)))
    wall, node1 = (time.perf_counter() - t0) / n, backend.node_cpu_seconds()
    return wall, None if node0 is None or node1 is None else (time.process_time() - cpu0 + node1 - node0) / n


def _tsc_seconds(code: str) -> list[float]:
    """Wall time of `tsc --noEmit` on one file, TSC_REPEATS times."""
    node_modules = node_home() / "node_modules"
    tsc = node_modules / ".bin" / "tsc"
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "node_modules").symlink_to(node_modules)
        (root / "component.tsx").write_text(code, encoding="utf-8")
        (root / "tsconfig.json").write_text(json.dumps(TSCONFIG), encoding="utf-8")
        times = []
        for _ in range(TSC_REPEATS):
            t0 = time.perf_counter()
            subprocess.run([str(tsc), "--noEmit", "-p", str(root)], cwd=root, capture_output=True, check=False)
            times.append(time.perf_counter() - t0)
    return times


def _parallel_rate(workers: int, n: int) -> float:
    """Aggregate syntax+types checks/s of `workers` backends (one Node each) in parallel threads."""
    backends = [ReactBackend() for _ in range(workers)]
    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(lambda b: b.start(), backends))
        list(pool.map(lambda k: _latencies(backends[k], 5, True, 10_000 + k * 10), range(workers)))  # warm-up
        share = max(1, n // workers)
        t0 = time.perf_counter()
        list(pool.map(lambda k: _latencies(backends[k], share, True, 20_000 + k * share), range(workers)))
        elapsed = time.perf_counter() - t0
    for b in backends:
        b.close()
    return share * workers / elapsed


def _cpu_text(*seconds: float | None) -> str:
    return " / ".join("n/a" if s is None else f"{s * 1000:.2f}" for s in seconds)


def _measure(backend: ReactBackend, n: int) -> dict:
    """Every figure of one backend (started here, closed after)."""
    backend.start()
    try:
        _latencies(backend, WARM_UP, True, 100_000)
        syntax, syntax_cpu = _timed(backend, n, False, 0)
        typed, typed_cpu = _timed(backend, n, True, n)
        batched8, batched8_cpu = _batched(backend, n, 2 * n, 8)
        batched, batched_cpu = _batched(backend, n, 3 * n, MAX_BATCH)
        steps = [_batched(backend, STEP, 4 * n + k * STEP, STEP) for k in range(STEPS)]  # a step's burst
        return dict(checker=backend.checker, syntax=syntax, syntax_cpu=syntax_cpu, typed=typed, typed_cpu=typed_cpu,
                    batched8=batched8, batched8_cpu=batched8_cpu, batched=batched, batched_cpu=batched_cpu,
                    step=statistics.median(w for w, _ in steps) * STEP,
                    step_cpu=None if any(c is None for _, c in steps) else statistics.median(c for _, c in steps) * STEP)
    finally:
        backend.close()


def _rows(m: dict, tsc: float) -> list[tuple[str, str, str, bool | None]]:
    syntax_rate, typed_ms = len(m["syntax"]) / sum(m["syntax"]), statistics.median(m["typed"]) * 1000
    batched_ms = m["batched"] * 1000
    return [
        ("syntax only: checks/s", f"{syntax_rate:.0f}", ">= 500", syntax_rate >= 500),
        ("syntax only: median ms/check", f"{statistics.median(m['syntax']) * 1000:.2f}", "", None),
        ("syntax + types: median ms/check", f"{typed_ms:.1f}", "<= 30", typed_ms <= 30),
        ("syntax + types: checks/s", f"{len(m['typed']) / sum(m['typed']):.0f}", "", None),
        ("CPU ms/check (Python + Node + tsgo): syntax only / + types", _cpu_text(m["syntax_cpu"], m["typed_cpu"]),
         "", None),
        ("syntax + types, 8 in flight (batched): ms/check", f"{m['batched8'] * 1000:.1f}", "", None),
        ("  CPU ms/check (Python + Node + tsgo), 8 in flight", _cpu_text(m["batched8_cpu"]), "", None),
        (f"syntax + types, {MAX_BATCH} in flight (batched): ms/check", f"{batched_ms:.1f}", "<= 20", batched_ms <= 20),
        (f"  CPU ms/check (Python + Node + tsgo), {MAX_BATCH} in flight", _cpu_text(m["batched_cpu"]), "", None),
        (f"a step's {STEP} at once: wall / CPU ms per {STEP} (median of {STEPS})",
         f"{m['step'] * 1000:.0f} / " + ("n/a" if m["step_cpu"] is None else f"{m['step_cpu'] * 1000:.0f}"), "", None),
        ("speed-up vs tsc spawn", f"{tsc * 1000 / typed_ms:.0f}x", ">= 20x", tsc * 1000 / typed_ms >= 20),
    ]


def run(console: Console, workers: int = 1, n: int = 200) -> None:
    """Measure and print the figures side by side with their targets, one column per type checker
    (TypeScript 5.9 and, when installed, tsgo; CPU counts Python, Node and tsgo's process)."""
    checkers = ["ts5"] + (["tsgo"] if tsgo_installed() else [])
    measured = []
    for checker in checkers:
        with console.status(f"{checker}: warming up, then {n} checks syntax only, {n} with types, batched ..."):
            measured.append(_measure(ReactBackend(checker=checker), n))
    with console.status(f"spawning tsc --noEmit {TSC_REPEATS} times ..."):
        tsc = statistics.median(_tsc_seconds(component(0).split("```tsx\n")[1].split("```")[0]))
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    table = Table(title=f"react reward service, one worker, {n} checks per mode (valid / syntax error / type error "
                        f"mix); load average {load:.1f} on {os.cpu_count()} CPUs")
    table.add_column("measure")
    for m in measured:
        table.add_column(m["checker"])
        table.add_column("met")
    table.add_column("target")
    per_checker = [_rows(m, tsc) for m in measured]
    for k, (name, _, target, _) in enumerate(per_checker[0]):
        cells = [c for rows in per_checker
                 for c in (rows[k][1], "" if rows[k][3] is None else ("yes" if rows[k][3] else "NO"))]
        table.add_row(name, *cells, target)
    blank = [""] * (2 * len(measured) - 1)
    table.add_row(f"tsc --noEmit spawn: median ms ({TSC_REPEATS} runs)", f"{tsc * 1000:.0f}", *blank, "")
    if workers > 1:
        table.add_row(f"syntax + types, {workers} workers: checks/s", f"{_parallel_rate(workers, n):.0f}", *blank, "")
    console.print(table)
