"""Replays a `make test-record` junit file through pytest-xdist's loadfile scheduling (as the Makefile
runs it: --dist loadfile --no-loadscope-reorder, tests/conftest.py's start order, and xdist's rule of
handing a worker its next file once at most 2 of its tests are pending), with each test's recorded
duration, to see whether the order of the files leaves one worker running alone at the end.

    python research/scripts/suite_schedule.py research/results/suite/stop45-fresh-clone.xml [workers] [first,files]

`first`: file names to start before all others (default: conftest's LONGEST_FILE). Durations were
measured under the run's own contention, so this shows the shape of the schedule, not what another
order would measure."""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from collections import OrderedDict

# tests/conftest.py's _start_rank: files with real_model-marked tests start before other integration files
REAL_MODEL = {"test_real_gemma.py", "test_gpu_replicate.py", "test_trl_reward_functions.py", "test_real_model.py",
              "test_vllm_engine.py"}


def replay(xml: str, workers: int, first: list[str]) -> list[dict]:
    files: OrderedDict[str, list[float]] = OrderedDict()
    for case in ET.parse(xml).iter("testcase"):
        parts = case.attrib["classname"].split(".")
        files.setdefault("/".join(parts[:3]) + ".py", []).append(float(case.attrib["time"]))

    def rank(path: str) -> tuple[int, int]:
        name = path.split("/")[-1]
        if name in first:
            return 0, first.index(name)
        return (1, 0) if name in REAL_MODEL else (2 if "/integration/" in path else 3, 0)

    queue = sorted(sorted(files), key=rank)
    nodes = [{"t": 0.0, "pending": [], "spans": {}} for _ in range(workers)]

    def assign(node: dict) -> None:
        path = queue.pop(0)
        node["pending"] += [(path, d) for d in files[path]]

    for node in nodes:
        assign(node)
    for node in nodes:
        if queue and len(node["pending"]) <= 2:
            assign(node)
    while any(n["pending"] for n in nodes):
        node = min((n for n in nodes if n["pending"]), key=lambda n: n["t"])
        path, seconds = node["pending"].pop(0)
        node["spans"].setdefault(path, [node["t"], 0.0])
        node["t"] += seconds
        node["spans"][path][1] = node["t"]
        if queue and len(node["pending"]) <= 2:
            assign(node)
    return nodes


if __name__ == "__main__":
    xml = sys.argv[1]
    workers = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    first = sys.argv[3].split(",") if len(sys.argv) > 3 else ["test_vllm_engine.py"]
    nodes = replay(xml, workers, first)
    total = sum(n["t"] for n in nodes)
    for k, node in enumerate(nodes):
        long = ", ".join(f"{p.split('/')[-1]} {a:.0f}-{b:.0f} s" for p, (a, b) in node["spans"].items() if b - a > 30)
        print(f"worker {k}: ends at {node['t']:.1f} s; files over 30 s: {long}")
    print(f"makespan {max(n['t'] for n in nodes):.1f} s; the tests' sum / {workers} = {total / workers:.1f} s")
