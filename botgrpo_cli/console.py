"""One Rich console for everything the CLI prints (stderr for messages keeps stdout clean)."""

from rich.console import Console

console = Console(stderr=True, highlight=False)
out = Console(highlight=False)  # stdout: tables and results people may pipe
