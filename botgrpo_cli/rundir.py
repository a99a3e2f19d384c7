"""What a run directory of `botgrpo train` holds, read in one place: metrics.jsonl and the
checkpoints/step-NNNNNN folders (the trainer, `botgrpo eval`, `botgrpo compare` and the
convergence benchmark all read them through here).

No torch import on purpose: `botgrpo compare` reads runs without it.
"""

from __future__ import annotations

import json
from pathlib import Path

from botgrpo_cli.errors import UserError

METRICS = "metrics.jsonl"
CHECKPOINTS = "checkpoints"
STEP_PREFIX = "step-"  # checkpoints/step-000020; a save in progress is .tmp-step-000020


def read_jsonl(path: Path) -> list[dict]:
    """The objects of a JSON-lines file (blank lines skipped); [] when there is no file. A line that
    is not a JSON object is one clear error naming the file and line."""
    return [record for _, record in _numbered(path)]


def _numbered(path: Path) -> list[tuple[int, dict]]:
    if not path.is_file():
        return []
    records = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as err:
            raise UserError(f"{path} line {number} is not JSON ({err.msg}); fix or remove that line") from None
        if not isinstance(record, dict):
            raise UserError(f"{path} line {number} is not a JSON object; fix or remove that line")
        records.append((number, record))
    return records


def read_metrics(path: Path) -> list[dict]:
    """The lines of a metrics.jsonl (give the run directory or the file), in step order; [] when
    the run has logged nothing yet."""
    file = path / METRICS if path.is_dir() else path
    numbered = _numbered(file)
    for number, record in numbered:
        if not isinstance(record.get("step"), int):
            raise UserError(f"{file} line {number} has no integer \"step\"; is this a botgrpo metrics.jsonl?")
    return sorted((record for _, record in numbered), key=lambda r: r["step"])


def checkpoint_step(folder: Path) -> int | None:
    """The step of a checkpoints/step-N folder name, else None."""
    digits = folder.name.removeprefix(STEP_PREFIX)
    return int(digits) if folder.name.startswith(STEP_PREFIX) and digits.isdigit() else None


def checkpoint_dirs(run_dir: Path) -> list[Path]:
    """Complete checkpoints, oldest first (temp folders of an interrupted save are not listed)."""
    root = run_dir / CHECKPOINTS
    found = [p for p in root.iterdir() if p.is_dir() and checkpoint_step(p) is not None] if root.is_dir() else []
    return sorted(found, key=checkpoint_step)
