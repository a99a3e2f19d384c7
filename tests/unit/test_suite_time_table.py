"""scripts/suite_time_table.py: per-file times from two JUnit XMLs, slowest "before" first, with totals,
outcomes, commits and load averages."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _module():
    spec = importlib.util.spec_from_file_location("suite_time_table", ROOT / "scripts" / "suite_time_table.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _xml(path: Path, cases: list[tuple[str, str, float, str]], total: float) -> Path:
    tags = {"passed": "", "failed": '<failure message="x"/>', "skipped": '<skipped message="s"/>'}
    body = "".join(f'<testcase classname="{c}" name="{n}" time="{t}">{tags[o]}</testcase>' for c, n, t, o in cases)
    path.write_text(f'<?xml version="1.0"?><testsuites><testsuite name="pytest" time="{total}">{body}'
                    "</testsuite></testsuites>")
    return path


def test_files_sorted_by_before_time_with_totals_and_records(tmp_path):
    mod = _module()
    before = _xml(tmp_path / "before.xml", [("tests.unit.test_a", "t1", 1.5, "passed"),
                                            ("tests.unit.test_a.TestX", "t2", 2.0, "failed"),
                                            ("tests.integration.test_b", "t3[p]", 7.0, "passed")], 12.5)
    after = _xml(tmp_path / "after.xml", [("tests.unit.test_a", "t1", 1.0, "passed"),
                                          ("tests.integration.test_b", "t3[p]", 3.0, "passed"),
                                          ("tests.unit.test_c", "t4", 0.0, "skipped")], 6.0)
    (tmp_path / "after.commit").write_text("abc1234\n")
    load = tmp_path / "before-uptime.txt"
    load.write_text(" 13:16:07 up 3 min,  load average: 0.95, 0.49, 0.20\n 13:42:35 up 30 min,  load average: 12.00, 12.40, 9.69\n")
    b, a = mod.read_run(before, load, "1a1ee37"), mod.read_run(after)
    assert (b.commit, a.commit) == ("1a1ee37", "abc1234")
    assert b.load == "0.95/0.49/0.20 -> 12.00/12.40/9.69" and a.load == "?"
    assert dict(b.outcomes) == {"passed": 2, "failed": 1}
    rows = mod.table(b, a).splitlines()
    assert [r.split(" | ")[0] for r in rows[2:5]] == ["| integration/test_b.py", "| unit/test_a.py", "| unit/test_c.py"]
    assert rows[2] == "| integration/test_b.py | 7.0 (1) | 3.0 (1) | -4.0 |"
    assert rows[3] == "| unit/test_a.py | 3.5 (2) | 1.0 (1) | -2.5 |"  # a class's tests count in its file
    assert rows[4] == "| unit/test_c.py | - | 0.0 (1) | +0.0 |"
    assert "**10.5 (3)**" in rows[5] and "**4.0 (3)**" in rows[5] and "**12.5**" in rows[6] and "**-6.5**" in rows[6]
