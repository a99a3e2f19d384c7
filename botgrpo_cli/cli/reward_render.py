"""`botgrpo reward render`: render a rollout file's components to PNGs and an HTML contact sheet."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Annotated, Optional

import typer

from botgrpo_cli.errors import UserError
from botgrpo_cli.evaluation.contact_sheet import contact_sheet
from botgrpo_rewards.protocol import ScoreRequest, ScoreResponse

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


def _service_env(chromium: str | None, pages: int, save_dir: Path) -> dict[str, str]:
    """The render service's settings (never request options): its Chromium, pages and save dir."""
    env = {"BOTGRPO_RENDER_PAGES": str(pages), "BOTGRPO_RENDER_SAVE_DIR": str(save_dir.resolve())}
    return env | ({"BOTGRPO_CHROMIUM": chromium} if chromium else {})


def _render_all(lines: list, out: Path, judge: str | None, chromium: str | None, pages: int) -> list[dict]:
    """Score every line through the render service (a child process; its start-up failure, e.g. no
    Chromium, is a ServiceStartError the CLI prints as one line)."""
    from botgrpo_cli.console import progress_bar
    from botgrpo_cli.reward_client import RewardPool

    png_dir = out / "png"
    png_dir.mkdir(parents=True, exist_ok=True)
    requests = [_request(line, judge) for line in lines]
    with RewardPool("render", env=_service_env(chromium, pages, png_dir)) as pool, \
            progress_bar(transient=False) as progress:
        task = progress.add_task("rendering", total=len(lines))
        progress.advance(task, sum(r is None for r in requests))
        futures = {i: pool.submit(r) for i, r in enumerate(requests) if r is not None}
        for fut in futures.values():
            fut.add_done_callback(lambda _f: progress.advance(task))
        return [_row(line, requests[i], futures[i].result() if i in futures else None, png_dir)
                for i, line in enumerate(lines)]


def _request(line, judge: str | None) -> ScoreRequest | None:
    """The line's request rendered alone (mode single), judged by `judge` or by similarity when it has a reference."""
    if line.request is None:
        return None
    req = line.request
    has_ref = isinstance(req.reference.get("reference_code"), str)
    req.options = {**req.options, "judge": judge or ("similarity" if has_ref else "none"), "mode": "single"}
    return req


def _png_name(lineno: int, id: str) -> str:
    """The screenshot's name in png/: line number first, so ids that repeat never share a file."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", f"{lineno:05d}-{id}")[:100] + ".png"


def _row(line, req: ScoreRequest | None, res: ScoreResponse | None, png_dir: Path) -> dict:
    """One contact-sheet row; a bad line or a failed score becomes a row saying why."""
    obj = line.obj or {}
    row = {"line": line.lineno, "id": str(obj.get("id", "")), "prompt": str(obj.get("prompt", ""))[:PROMPT_EXCERPT],
           "rendered": False, "score": None, "png": None, "error": line.problem}
    if req is None or res is None:
        return row
    if not res.ok:
        row["error"] = f"{res.status}: {res.error.message if res.error else 'no answer'}"
        return row
    shot = res.info.get("screenshot")
    png = None
    if isinstance(shot, str) and Path(shot).parent == png_dir.resolve():  # the service saved it under our png/
        png = _png_name(line.lineno, str(req.id))
        os.replace(shot, png_dir / png)  # the service named it by the pool's wire id
    row.update(rendered=bool(res.metrics.get("rendered")), png=png,
               score=res.score if req.options["judge"] != "none" else None,
               error=res.info.get("render_error") or (res.info.get("console_errors") or "").split("\n")[0] or None)
    return row
