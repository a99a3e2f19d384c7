"""The test suite's time per file, before and after a change, as a Markdown table, from the JUnit XML
of one whole-suite run each (pytest --junitxml). Rows are sorted by the "before" time, slowest first.

    python scripts/suite_time_table.py BEFORE.xml AFTER.xml [--before-load F] [--after-load F]
                                       [--before-commit C] [--after-commit C]

A run recorded with `make test-record RECORD=PATH` (PATH.xml) also has PATH.commit (the commit it ran)
and PATH.load (`uptime` at its start and at its end), read when the options do not name others; the
heading gives both.
A file's time is the sum of its tests' setup, call and teardown (pytest's JUnit default), so a
module-scoped fixture counts once, in the file that uses it. With several workers (pytest-xdist) the
files run side by side: their times add up to more than pytest's wall time, the last row.
"""

from __future__ import annotations

import argparse
import re
import xml.etree.ElementTree as ET
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

LOAD = re.compile(r"load average:\s*([\d.]+),\s*([\d.]+),\s*([\d.]+)")


@dataclass
class Run:
    seconds: float = 0.0  # pytest's own total: collection and every test
    files: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    tests: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    outcomes: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    commit: str = "?"
    load: str = "?"


def test_file(classname: str) -> str:
    """tests.integration.test_x.TestY -> integration/test_x.py (the module is the first test_* part)."""
    parts = classname.split(".")
    end = next((i for i, p in enumerate(parts) if p.startswith("test_")), len(parts) - 1)
    return "/".join(parts[1 if parts[0] == "tests" else 0:end + 1]) + ".py"


def outcome(case: ET.Element) -> str:
    for tag in ("failure", "error", "skipped"):
        if case.find(tag) is not None:
            return {"failure": "failed", "error": "errors"}.get(tag, tag)
    return "passed"


def read_run(xml: Path, load_file: Path | None = None, commit: str | None = None) -> Run:
    run = Run()
    root = ET.parse(xml).getroot()
    for suite in root.iter("testsuite"):
        run.seconds += float(suite.get("time", 0))
    for case in root.iter("testcase"):
        name = test_file(case.get("classname", ""))
        run.files[name] += float(case.get("time", 0))
        run.tests[name] += 1
        run.outcomes[outcome(case)] += 1
    stem = xml.with_suffix("")
    commit_file = stem.with_suffix(".commit")
    if commit:
        run.commit = commit
    elif commit_file.exists():
        run.commit = commit_file.read_text().strip()[:12]
    load = load_file or stem.with_suffix(".load")
    if load.exists():
        found = LOAD.findall(load.read_text())
        if found:
            run.load = " -> ".join("/".join(t) for t in (found[0], found[-1])) if len(found) > 1 else "/".join(found[0])
    return run


def summary(run: Run) -> str:
    counts = ", ".join(f"{n} {k}" for k, n in sorted(run.outcomes.items()))
    return f"commit {run.commit}, {counts}; load average (1/5/15 min) at start -> end: {run.load}"


def table(before: Run, after: Run) -> str:
    names = sorted(set(before.files) | set(after.files), key=lambda n: (-before.files.get(n, 0.0), n))
    lines = ["| file | before s (tests) | after s (tests) | after - before s |", "| --- | ---: | ---: | ---: |"]

    def cell(run: Run, name: str) -> str:
        return f"{run.files[name]:.1f} ({run.tests[name]})" if name in run.files else "-"

    for name in names:
        delta = after.files.get(name, 0.0) - before.files.get(name, 0.0)
        lines.append(f"| {name} | {cell(before, name)} | {cell(after, name)} | {delta:+.1f} |")
    tb, ta = sum(before.files.values()), sum(after.files.values())
    lines.append(f"| **all tests, summed** | **{tb:.1f} ({sum(before.tests.values())})** | "
                 f"**{ta:.1f} ({sum(after.tests.values())})** | **{ta - tb:+.1f}** |")
    lines.append(f"| **pytest's wall time** (with collection) | **{before.seconds:.1f}** | **{after.seconds:.1f}** | "
                 f"**{after.seconds - before.seconds:+.1f}** |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    for side in ("before", "after"):
        parser.add_argument(f"--{side}-load", type=Path, help="uptime output at the run's start and end")
        parser.add_argument(f"--{side}-commit", help="the commit the run tested")
    args = parser.parse_args()
    before = read_run(args.before, args.before_load, args.before_commit)
    after = read_run(args.after, args.after_load, args.after_commit)
    print(f"Before: {summary(before)}.  \nAfter: {summary(after)}.\n")
    print(table(before, after))


if __name__ == "__main__":
    main()
