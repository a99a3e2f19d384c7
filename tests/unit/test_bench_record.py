"""`botgrpo bench --json FILE`: what a benchmark printed is kept as data, and the figures page is
generated from those files, never typed."""

from __future__ import annotations

import json
import sys

from typer.testing import CliRunner

import figures_doc  # research/pages, on sys.path through pytest's pythonpath (pyproject.toml)
from botgrpo_cli.bench.provenance import git_commit
from botgrpo_cli.cli import app
from botgrpo_cli.cli.bench_rewards import _child_bench
from botgrpo_cli.console import out
from botgrpo_cli.bench.record import Recorder

ALGOS = ["algos", "--batch", "16", "--groups", "4", "--seq-len", "64", "--repeats", "1"]


def test_a_bench_command_writes_its_tables_lines_and_provenance(tmp_path, monkeypatch):
    path = tmp_path / "algos.json"
    args = ["bench", "--json", str(path), *ALGOS]
    monkeypatch.setattr(sys, "argv", ["/venv/bin/botgrpo", *args])  # what the record names: the process's command line
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    record = json.loads(path.read_text())
    assert record["command"].endswith("--json " + str(path) + " " + " ".join(ALGOS))
    assert record["commit"] == git_commit()[0] and len(record["loadavg_start"]) == 3
    assert record["started"] <= record["finished"]
    (table,) = [b["table"] for b in record["output"] if "table" in b]
    assert table["columns"][:2] == ["estimator", "median ms"]
    assert [row[0] for row in table["rows"]][:2] == ["masked sum (floor)", "bot_grpo"]
    lines = [b["line"] for b in record["output"] if "line" in b]
    assert any(line.startswith("per-group loop / bot_grpo: ") for line in lines)
    # every printed cell is in the record: the console output and the file cannot disagree
    for row in table["rows"]:
        assert all(cell in result.output for cell in row)
    assert out.recorder is None


def test_a_failed_bench_command_writes_nothing(tmp_path):
    path = tmp_path / "bad.json"
    result = CliRunner().invoke(app, ["bench", "--json", str(path), "algos", "--batch", "4", "--groups", "8"])
    assert result.exit_code != 0 and not path.exists()
    assert out.recorder is None  # the next command starts clean


def test_a_child_benchmark_is_recorded_as_its_text(tmp_path):
    out.recorder = Recorder(tmp_path / "child.json", ["botgrpo", "bench", "rewards"])
    try:
        code = _child_bench([sys.executable, "-c", "import os; print('wide', os.environ['COLUMNS']); print('done')"])
        out.recorder.write()
    finally:
        out.recorder = None
    assert code == 0
    record = json.loads((tmp_path / "child.json").read_text())
    assert record["output"] == [{"text": "wide 200\ndone"}]


def test_the_figures_page_shows_each_record_whole(tmp_path):
    folder = tmp_path / "research" / "results" / "bench"
    folder.mkdir(parents=True)
    assert figures_doc.pages(tmp_path, "research/results") == {}
    record = {"format": 1, "command": "botgrpo bench step --vs trl", "commit": "0123456789abcdef", "dirty": False,
              "started": "2026-12-02T05:00:00Z", "finished": "2026-12-02T05:01:00Z", "cpus": 2,
              "loadavg_start": [0.5, 0.4, 0.3], "loadavg_end": [1.5, 0.9, 0.4],
              "output": [{"table": {"title": "step", "columns": ["side", "step s"], "rows": [["botgrpo", "0.61|x"]]}},
                         {"line": "ratio 0.61x"}, {"text": "child\ntext"}]}
    (folder / "b_step.json").write_text(json.dumps(record))
    (folder / "a_first.json").write_text(json.dumps({**record, "command": "botgrpo bench algos"}))
    (folder / "b_step.md").write_text("Why this run: the quiet rerun.\n")
    ((where, page),) = figures_doc.pages(tmp_path, "research/results").items()
    assert where == tmp_path / "research" / "benchmark-figures.md"
    assert page.index("## a_first") < page.index("## b_step") < page.index("Why this run")
    assert "| botgrpo | 0.61\\|x |" in page and "ratio 0.61x" in page and "```\nchild\ntext\n```" in page
    assert "Commit 0123456789; 2026-12-02T05:00:00Z -> 2026-12-02T05:01:00Z" in page
    assert "0.50 / 0.40 / 0.30 before, 1.50 / 0.90 / 0.40 after" in page
    record["output"][0]["table"]["rows"][0][1] = "0.70"  # a changed figure changes the page
    (folder / "b_step.json").write_text(json.dumps(record))
    assert "| botgrpo | 0.70 |" in next(iter(figures_doc.pages(tmp_path, "research/results").values()))
