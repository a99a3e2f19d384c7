"""One Rich console for everything the CLI prints (stderr for messages keeps stdout clean)."""

import os
import sys

from rich.console import Console

# Piped or captured output would otherwise be cut to 80 columns, which truncates benchmark tables;
# COLUMNS still wins when set.
_PIPED_WIDTH = None if sys.stdout.isatty() or os.environ.get("COLUMNS") else 160

console = Console(stderr=True, highlight=False)
out = Console(highlight=False, width=_PIPED_WIDTH)  # stdout: tables and results people may pipe


def progress_bar(label: str = "{task.description}", *, after: str = "", elapsed: bool = False,
                 transient: bool = True, disable: bool = False):
    """The one progress bar on `console`: LABEL, bar, done/total, time left (or elapsed), AFTER.
    label and after are Rich templates ({task.description}, {task.fields[NAME]})."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    columns = [TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn() if elapsed else TimeRemainingColumn()]
    return Progress(*columns, *([TextColumn(after)] if after else []), console=console, transient=transient,
                    disable=disable)
