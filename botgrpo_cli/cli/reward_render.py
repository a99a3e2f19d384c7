"""`botgrpo reward render`: render a rollout file's components to PNGs and an HTML contact sheet."""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Annotated, Optional

import typer

from botgrpo_cli.errors import UserError
from botgrpo_cli.evaluation.contact_sheet import contact_sheet

JUDGES = ("similarity", "vlm", "none")
PROMPT_EXCERPT = 240


def register(app: typer.Typer) -> None:
    @app.command()
    def render(
        file: Annotated[Path, typer.Argument(help="JSONL rollout file: one {id, prompt, completion, reference} per line.")],
        out: Annotated[Path, typer.Option("--out", "-o", help="Folder for the PNGs, index.html and rendered.jsonl.")],
        judge: Annotated[Optional[str], typer.Option("--judge", help="similarity | vlm | none (default: similarity where a line has reference.reference_code, else none).")] = None,
        chromium: Annotated[Optional[str], typer.Option("--chromium", help="Chromium binary (default: $BOTGRPO_CHROMIUM, Playwright's, /usr/bin/chromium).")] = None,
        pages: Annotated[int, typer.Option("--pages", min=1, help="Browser pages rendering at once.")] = 2,
    ) -> None:
        """Render each completion of a rollout file to a PNG and write an HTML contact sheet."""
        from botgrpo_cli.reward_client.rollouts import read_rollouts

        if judge is not None and judge not in JUDGES:
            raise UserError(f"--judge {judge!r} is unknown; use one of {', '.join(JUDGES)}")
        if not file.is_file():
            raise UserError(f"rollout file {file} does not exist; pass a JSONL file of {{id, prompt, completion, reference}} lines")
        lines = read_rollouts(file)
        if not lines:
            raise UserError(f"{file} has no rollout lines")
        rows = _render_all(lines, out, judge, chromium, pages)
        (out / "index.html").write_text(contact_sheet(rows, title=file.name), encoding="utf-8")
        with (out / "rendered.jsonl").open("w", encoding="utf-8") as f:
            for row in rows:
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
        from botgrpo_cli.console import console

        n_ok = sum(r["rendered"] for r in rows)
        console.print(f"rendered {n_ok}/{len(rows)} completions; contact sheet: {out / 'index.html'}")


def _start_backend(chromium: str | None, pages: int, save_dir: Path):
    from botgrpo_rewards.render.chromium import ChromiumNotFound
    from botgrpo_rewards.render.compiler import CompilerUnavailable
    from botgrpo_rewards.render.service import RenderBackend

    backend = RenderBackend(chromium=chromium, pages=pages, save_dir=str(save_dir))
    try:
        backend.start()
    except (ChromiumNotFound, CompilerUnavailable) as err:
        backend.close()
        raise UserError(str(err)) from None
    return backend


def _render_all(lines: list, out: Path, judge: str | None, chromium: str | None, pages: int) -> list[dict]:
    from rich.progress import Progress

    from botgrpo_cli.console import console

    png_dir = out / "png"
    png_dir.mkdir(parents=True, exist_ok=True)
    backend = _start_backend(chromium, pages, png_dir)
    try:
        with Progress(console=console) as progress, ThreadPoolExecutor(pages) as pool:
            task = progress.add_task("rendering", total=len(lines))

            def one(line) -> dict:
                row = _render_line(backend, line, judge)
                progress.advance(task)
                return row
            return list(pool.map(one, lines))
    finally:
        backend.close()


def _render_line(backend, line, judge: str | None) -> dict:
    """One contact-sheet row; a bad line or a failed score becomes a row saying why."""
    from botgrpo_rewards.backend import BackendError, BackendTimeout

    obj = line.obj or {}
    row = {"line": line.lineno, "id": str(obj.get("id", "")), "prompt": str(obj.get("prompt", ""))[:PROMPT_EXCERPT],
           "rendered": False, "score": None, "png": None, "error": line.problem}
    if line.request is None:
        return row
    req = line.request
    has_ref = isinstance(req.reference.get("reference_code"), str)
    req.options = {**req.options, "judge": judge or ("similarity" if has_ref else "none"), "mode": "single"}
    req.id = f"{line.lineno:05d}-{req.id}"  # unique file names even when ids repeat
    try:
        res = backend.score(req, time.monotonic() + req.deadline_ms / 1000)
    except BackendTimeout as err:
        row["error"] = f"timeout: {err}"
        return row
    except BackendError as err:
        row["error"] = f"error: {err}"
        return row
    shot = res.info.get("screenshot")
    row.update(rendered=bool(res.metrics.get("rendered")), png=Path(shot).name if shot else None,
               score=res.score if req.options["judge"] != "none" else None,
               error=res.info.get("render_error") or (res.info.get("console_errors") or "").split("\n")[0] or None)
    return row
