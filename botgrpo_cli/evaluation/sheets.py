"""A contact sheet (index.html) of an evaluation's screenshots, in the `botgrpo reward render` style."""

from __future__ import annotations

import os
from pathlib import Path

from botgrpo_cli.algos.metrics import passes
from botgrpo_cli.evaluation.results import Problem

PROMPT_EXCERPT = 240


def rows(problems: list[Problem]) -> list[dict]:
    """One card per sample: its PNG's name (the sheet's png/ folder), render result, first error."""
    out = []
    for p in problems:
        for j, s in enumerate(p.samples):
            error = s.error or (f"render {s.render_status}: {s.render_error}" if s.render_error else None)
            out.append({"line": len(out) + 1, "id": f"{p.id} #{j}", "prompt": p.prompt[:PROMPT_EXCERPT],
                        "rendered": passes(s.metrics.get("rendered", 0.0)),
                        "score": s.metrics.get("similarity", s.metrics.get("judge")),
                        "png": Path(s.screenshot).name if s.screenshot else None,
                        "error": error})
    return out


def write(problems: list[Problem], folder: Path, root: Path, title: str) -> str:
    """folder/index.html over the PNGs in folder/png; returns its path relative to root."""
    from botgrpo_cli.evaluation.contact_sheet import contact_sheet

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "index.html").write_text(contact_sheet(rows(problems), title), encoding="utf-8")
    return os.path.relpath(folder / "index.html", root)
