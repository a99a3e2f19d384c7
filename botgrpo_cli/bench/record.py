"""`botgrpo bench --json FILE ...`: what a benchmark printed, kept as data.

Every table and line a bench command prints on stdout is also kept (a table as its title, columns
and cells; a line as plain text; a child benchmark's output as its text), and written at the end
with the command line and where the figures came from: the commit, when, and the load average
before and after. research/pages/make_pages.py turns the committed files into research/benchmark-figures.md,
so a published figure is generated from the file the command wrote, never typed from a console.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path

from rich.table import Table
from rich.text import Text

from botgrpo_cli.bench.provenance import provenance

FORMAT = 1


def _plain(value) -> str:
    if isinstance(value, Text):
        return value.plain
    return Text.from_markup(value).plain if isinstance(value, str) else str(value)


def table_data(table: Table) -> dict:
    """A Rich table as title, column headers and rows of plain cell text."""
    columns = [_plain(c.header) for c in table.columns]
    cells = [[_plain(cell) for cell in c.cells] for c in table.columns]
    rows = [list(row) for row in zip(*cells)] if cells else []
    return {"title": _plain(table.title) if table.title is not None else "", "columns": columns, "rows": rows}


class Recorder:
    """Collects a command's printed output; `write` puts it in `path` with its provenance."""

    def __init__(self, path: Path, argv: list[str] | None = None):
        self.path = path
        self.argv = list(sys.argv if argv is None else argv)
        self.start = provenance()
        self.blocks: list[dict] = []

    def printed(self, objects: tuple) -> None:
        for obj in objects:
            if isinstance(obj, Table):
                self.blocks.append({"table": table_data(obj)})
            elif isinstance(obj, (str, Text)):
                self.blocks.append({"line": _plain(obj)})

    def child_output(self, text: str) -> None:
        """A child process's benchmark output, kept as printed (its tables are text)."""
        self.blocks.append({"text": text.rstrip("\n")})

    def write(self) -> Path:
        end = provenance()
        command = "botgrpo " + shlex.join(self.argv[1:])  # argv[0]: the botgrpo script or botgrpo_cli
        record = {"format": FORMAT, "command": command, "commit": self.start["commit"],
                  "dirty": self.start["dirty"], "started": self.start["written"], "finished": end["written"],
                  "loadavg_start": self.start["loadavg"], "loadavg_end": end["loadavg"],
                  "cpus": os.cpu_count(), "output": self.blocks}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(json.dumps(record, indent=1) + "\n")
        return self.path
