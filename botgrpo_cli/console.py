"""One Rich console for everything the CLI prints (stderr for messages keeps stdout clean)."""

import os
import sys
import warnings

from rich.console import Console

# Piped or captured output (a log file, CI) would otherwise be wrapped or cut at 80 columns, which
# breaks messages and paths across lines and truncates tables; COLUMNS still wins when set.
_WIDE = 200


def _width(stream) -> int | None:
    return None if stream.isatty() or os.environ.get("COLUMNS") else _WIDE


class _Out(Console):
    """stdout's console; with a `recorder` (`botgrpo bench --json`), what it prints is also kept."""

    recorder = None

    def print(self, *objects, **kwargs) -> None:
        if self.recorder is not None:
            self.recorder.printed(objects)
        super().print(*objects, **kwargs)


console = Console(stderr=True, highlight=False, width=_width(sys.stderr), soft_wrap=not sys.stderr.isatty())
out = _Out(highlight=False, width=_width(sys.stdout), soft_wrap=not sys.stdout.isatty())  # stdout: tables and results people may pipe


def is_log() -> bool:
    """stderr goes to a file or pipe (CI, nohup): print plain lines instead of live bars."""
    return not console.is_terminal


# Library deprecation notices (transformers, torch, peft ...) are for their developers, not for
# someone running a command; BOTGRPO_DEBUG=1 shows them again.
if os.environ.get("BOTGRPO_DEBUG") != "1":
    warnings.filterwarnings("ignore", category=FutureWarning,
                            module=r"(transformers|torch|peft|accelerate|huggingface_hub|safetensors)(\.|$)")


def progress_bar(label: str = "{task.description}", *, after: str = "", elapsed: bool = False,
                 transient: bool = True, disable: bool = False):
    """The one progress bar on `console`: LABEL, bar, done/total, time left (or elapsed), AFTER.
    label and after are Rich templates ({task.description}, {task.fields[NAME]})."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    columns = [TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn() if elapsed else TimeRemainingColumn()]
    return Progress(*columns, *([TextColumn(after)] if after else []), console=console, transient=transient,
                    disable=disable)
