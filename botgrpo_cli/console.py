"""One Rich console for everything the CLI prints (stderr for messages keeps stdout clean)."""

import os
import sys

from rich.console import Console

# Piped or captured output would otherwise be cut to 80 columns, which truncates benchmark tables;
# COLUMNS still wins when set.
_PIPED_WIDTH = None if sys.stdout.isatty() or os.environ.get("COLUMNS") else 160

console = Console(stderr=True, highlight=False)
out = Console(highlight=False, width=_PIPED_WIDTH)  # stdout: tables and results people may pipe
