"""`botgrpo bench rewards --service render`: renders/s of the service's design vs a fresh context per render.

Both designs render the same generated components in the same run: compile (esbuild helper) +
mount + screenshot, one browser and one page per worker thread. The service's design keeps one
context per page and gives every render a fresh document (a navigation, storage cleared), made
while the result goes back; the baseline opens a new browser context and page for every render.
"""

from __future__ import annotations

import os
import random
import statistics
import time
from concurrent.futures import ThreadPoolExecutor

from rich.console import Console
from rich.table import Table

from botgrpo_rewards.render.compiler import Compiler
from botgrpo_rewards.render.renderer import Renderer

FRESH_MAX = 40  # the baseline is slow; it renders this many of the same components
COLOURS = ["#2255aa", "#aa3322", "#22aa55", "#8844cc", "#dd8800", "#333333"]
WORDS = ["Milk", "Eggs", "Bread", "Tea", "Rice", "Apples", "Soap", "Butter", "Cheese", "Salt"]


def components(n: int, seed: int = 0) -> list[str]:
    """n varied TSX components: a titled card with a list, a counter and a styled button."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        items = rng.sample(WORDS, rng.randint(2, 6))
        c1, c2 = rng.sample(COLOURS, 2)
        out.append(
            'import { useState, useEffect } from "react";\n'
            f"export default function App{i}() {{\n"
            f"  const [n, setN] = useState<number>({rng.randint(0, 9)});\n"
            "  useEffect(() => setN((x) => x + 1), []);\n"
            f"  const items = {items!r};\n"
            f'  return (<div style={{{{ padding: {rng.randint(8, 32)}, fontFamily: "sans-serif" }}}}>\n'
            f'    <h1 style={{{{ color: "{c1}" }}}}>List {i}: {{n}}</h1>\n'
            "    <ul>{items.map((t) => <li key={t}>{t}</li>)}</ul>\n"
            f'    <button style={{{{ background: "{c2}", color: "white", padding: 8 }}}}>Add</button>\n'
            "  </div>);\n}\n"
        )
    return out


def _worker(compiler: Compiler, codes: list[str], fresh: bool) -> list[float]:
    """Render `codes` in one browser; per-render seconds (compile + render)."""
    renderer = Renderer(compiler.runtime(), pages=1, fresh_context=fresh)
    renderer.start()
    try:
        renderer.render(compiler.compile(codes[0]), time.monotonic() + 30)  # warm-up, not counted
        times = []
        for code in codes:
            t0 = time.perf_counter()
            result = renderer.render(compiler.compile(code), time.monotonic() + 30)
            times.append(time.perf_counter() - t0)
            if not result.rendered:
                raise RuntimeError(f"benchmark component did not render: {result.error}")
        return times
    finally:
        renderer.close()


def _measure(compiler: Compiler, codes: list[str], workers: int, fresh: bool) -> dict:
    shards = [codes[w::workers] for w in range(workers)]
    with ThreadPoolExecutor(workers) as pool:
        per_worker = list(pool.map(lambda s: _worker(compiler, s, fresh), shards))
    all_times = [t for ts in per_worker for t in ts]
    rates = [len(ts) / sum(ts) for ts in per_worker]
    # Workers render side by side, so the slowest one's rendering time bounds the whole run
    # (browser start-up and warm-up are left out of both designs).
    return {"n": len(all_times), "median_ms": statistics.median(all_times) * 1e3,
            "per_worker": statistics.median(rates), "total": len(all_times) / max(sum(ts) for ts in per_worker)}


def run(console: Console, workers: int = 1, n: int = 200) -> dict:
    """Print and return the figures; each design is measured on the same components."""
    codes = components(n)
    compiler = Compiler()
    try:
        document = _measure(compiler, codes, workers, fresh=False)
        fresh = _measure(compiler, codes[: max(workers, min(n, FRESH_MAX))], workers, fresh=True)
    finally:
        compiler.close()
    ratio = document["per_worker"] / fresh["per_worker"]
    table = Table(title=f"render service: {workers} worker(s), one browser each")
    for col in ("design", "renders", "median ms/render", "renders/s per worker", "renders/s total"):
        table.add_column(col, justify="right")
    for name, m in (("fresh document", document), ("fresh context", fresh)):
        table.add_row(name, str(m["n"]), f"{m['median_ms']:.1f}", f"{m['per_worker']:.1f}", f"{m['total']:.1f}")
    console.print(table)
    console.print(f"load average while measuring: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    console.print(f"fresh document / fresh context (per worker): {ratio:.1f}x")
    return {"document": document, "fresh": fresh, "ratio": ratio}
