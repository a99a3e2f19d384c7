"""`botgrpo reward`: run reward services and score rollout files offline."""

from __future__ import annotations

import shlex
import time
from pathlib import Path
from typing import Annotated, Optional

import typer

from botgrpo_cli.errors import UserError

reward_app = typer.Typer(help="Run reward services (serve) and score rollout files (score).", no_args_is_help=True)

Workers = Annotated[int, typer.Option("--workers", "-w", min=1, help="Service processes to run in parallel.")]


def _check_service(name: str) -> None:
    from botgrpo_rewards.registry import SERVICES

    if name not in SERVICES:
        raise UserError(f"unknown reward service {name!r}; known services: {', '.join(sorted(SERVICES))}")


@reward_app.command()
def serve(
    name: Annotated[str, typer.Argument(help="Service to run: math, react or render.")],
    http: Annotated[Optional[str], typer.Option("--http", metavar="HOST:PORT", help="Serve over HTTP (host defaults to 127.0.0.1; IPv6 as [::1]:PORT) instead of stdin/stdout.")] = None,
    max_inflight: Annotated[Optional[int], typer.Option("--max-inflight", min=1, help="Requests scored at once.")] = None,
    token: Annotated[Optional[str], typer.Option("--token", envvar="BOTGRPO_REWARD_TOKEN", show_envvar=True, help="HTTP: bearer token every client must send (Authorization: Bearer TOKEN).")] = None,
    allow_remote_without_token: Annotated[bool, typer.Option("--allow-remote-without-token", help="HTTP: serve beyond loopback with no token (anyone who can connect may use it).")] = False,
    max_body_bytes: Annotated[Optional[int], typer.Option("--max-body-bytes", min=1, help="HTTP: largest POST body (default 8000000).")] = None,
    http_timeout_s: Annotated[Optional[float], typer.Option("--http-timeout-s", min=0.1, help="HTTP: close connections silent this long (default 30).")] = None,
) -> None:
    """Run one reward service on stdin/stdout (JSON lines), or over HTTP with --http.

    The service's own settings (URLs, keys, folders) come from its environment, never from
    requests: render reads BOTGRPO_VLM_BASE_URL, BOTGRPO_VLM_MODEL, BOTGRPO_VLM_API_KEY and
    BOTGRPO_RENDER_SAVE_DIR.
    """
    from botgrpo_rewards.http_server import HttpSettings
    from botgrpo_rewards.run import ServiceStartError, check_http, serve_runner, setup_logging, start_runner

    _check_service(name)
    settings = HttpSettings.from_env(token=token, allow_remote_without_token=allow_remote_without_token,
                                     max_body_bytes=max_body_bytes, timeout_s=http_timeout_s)
    if http is not None:
        try:
            check_http(http, settings)
        except ValueError as err:
            raise UserError(str(err)) from None
    from botgrpo_rewards.registry import load_backend

    setup_logging()
    try:
        backend = load_backend(name)
    except Exception as err:  # a missing dependency or tool: say which, not a traceback
        raise UserError(f"reward service {name!r} could not load: {type(err).__name__}: {err}") from None
    try:
        runner = start_runner(backend, max_inflight)
    except ServiceStartError as err:  # e.g. no Chromium: the backend's message says what to install
        raise UserError(str(err)) from None
    try:
        code = serve_runner(runner, http, settings)
    except ValueError as err:  # e.g. the port is taken
        raise UserError(str(err)) from None
    raise typer.Exit(code)


@reward_app.command()
def score(
    file: Annotated[Path, typer.Argument(help="JSONL rollout file: one {id, prompt, completion, reference, options?} per line.")],
    service: Annotated[str, typer.Option("--service", "-s", help="Reward service: math, react or render.")],
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Where to write (default: FILE with .scored.jsonl).")] = None,
    workers: Workers = 1,
    deadline_ms: Annotated[Optional[int], typer.Option("--deadline-ms", min=1, help="Per-request deadline for every line (default: each line's, else 10000).")] = None,
    command: Annotated[Optional[str], typer.Option("--command", help="Run this command as the service instead of the built-in one (any program speaking protocol v1).")] = None,
) -> None:
    """Score a JSONL rollout file through a reward service; writes the lines with the scores added."""
    from botgrpo_cli.reward_client.rollouts import read_rollouts

    if command is None:
        _check_service(service)
    if not file.is_file():
        raise UserError(f"rollout file {file} does not exist; pass a JSONL file of {{id, prompt, completion, reference}} lines")
    out_path = output or file.with_name(file.name.removesuffix(".jsonl") + ".scored.jsonl")
    lines = read_rollouts(file, deadline_ms)
    if not lines:
        raise UserError(f"{file} has no rollout lines")
    _score_lines(lines, service, out_path, workers, shlex.split(command) if command else None)


def _score_lines(lines: list, service: str, out_path: Path, workers: int, command: list[str] | None) -> None:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    from botgrpo_cli.console import console
    from botgrpo_cli.reward_client import RewardPool
    from botgrpo_cli.reward_client.rollouts import merge, problem_response, write_jsonl

    for line in lines:
        if line.problem:
            console.print(f"[yellow]line {line.lineno}:[/] {line.problem} (kept in the output with status error)")
    good = [ln for ln in lines if ln.request is not None]
    columns = (TextColumn("scoring with {task.fields[service]}"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
    scored, stats, elapsed = [], {"restarts": 0, "resent": 0}, 0.0
    if good:  # a file of only malformed lines needs no service
        with RewardPool(service, workers=workers, command=command) as pool, Progress(*columns, console=console) as bar:
            task = bar.add_task("score", total=len(good), service=service)
            start = time.monotonic()  # throughput counts scoring, not service start-up
            scored = pool.score([ln.request for ln in good], progress=lambda _resp: bar.advance(task))
            elapsed = time.monotonic() - start
            stats = pool.stats
    by_line = {ln.lineno: resp for ln, resp in zip(good, scored)}
    responses = [by_line.get(ln.lineno) or problem_response(ln) for ln in lines]
    write_jsonl(out_path, [merge(ln, resp) for ln, resp in zip(lines, responses)])
    _print_summary(responses, stats, len(good) / elapsed if elapsed > 0 else 0.0, out_path)


def _print_summary(responses: list, stats: dict, rate: float, out_path: Path) -> None:
    from rich.table import Table

    from botgrpo_cli.console import out
    from botgrpo_cli.reward_client.rollouts import summarize

    s = summarize(responses)
    table = Table(title=f"reward score: {len(responses)} lines -> {out_path}")
    table.add_column("what")
    table.add_column("value", justify="right")
    for status, n in s["counts"].items():
        table.add_row(f"status {status}", str(n))
    table.add_row("mean score (ok)", f"{s['mean_score']:.4f}")
    for name, mean in s["metrics"].items():
        table.add_row(f"mean {name}", f"{mean:.4f}")
    table.add_row("throughput", f"{rate:.1f} lines/s")
    table.add_row("restarts / resent", f"{stats['restarts']} / {stats['resent']}")
    out.print(table)


def register(app: typer.Typer) -> None:
    from botgrpo_cli.cli import reward_render

    reward_render.register(reward_app)
    app.add_typer(reward_app, name="reward", help="Reward services: serve one, or score rollout files offline.")
