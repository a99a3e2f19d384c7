"""`botgrpo reward`: run reward services and score rollout files offline."""

from __future__ import annotations

import math
import shlex
from pathlib import Path
from typing import Annotated, Optional

import typer

from botgrpo_cli.cli.options import CHOICES, Workers, listing_choices
from botgrpo_cli.errors import UserError
from botgrpo_rewards.protocol import DEFAULT_DEADLINE_MS
from botgrpo_rewards.run import SERVE_HELP

reward_app = typer.Typer(help="Run reward services (serve) and score rollout files (score).", no_args_is_help=True)



def check_service_name(name: str) -> None:
    """UserError (one line, the known services) unless `name` is an installed reward service."""
    from botgrpo_rewards.registry import UnknownService, check_service

    try:
        check_service(name)
    except UnknownService as err:
        raise UserError(str(err)) from None


@reward_app.command(cls=listing_choices(name="botgrpo_rewards.registry:SERVICES"))
def serve(
    name: Annotated[str, typer.Argument(help=f"Service to run: {CHOICES}.")],
    http: Annotated[Optional[str], typer.Option("--http", metavar="HOST:PORT", help=SERVE_HELP["http"])] = None,
    max_inflight: Annotated[Optional[int], typer.Option("--max-inflight", min=1, help=SERVE_HELP["max_inflight"])] = None,
    token: Annotated[Optional[str], typer.Option("--token", envvar="BOTGRPO_REWARD_TOKEN", help=SERVE_HELP["token"])] = None,
    allow_remote_without_token: Annotated[bool, typer.Option("--allow-remote-without-token",
                                                             help=SERVE_HELP["allow_remote_without_token"])] = False,
    max_body_bytes: Annotated[Optional[int], typer.Option("--max-body-bytes", min=1, help=SERVE_HELP["max_body_bytes"])] = None,
    http_timeout_s: Annotated[Optional[float], typer.Option("--http-timeout-s", min=0.1,
                                                            help=SERVE_HELP["http_timeout_s"])] = None,
    function: Annotated[Optional[str], typer.Option("--function", help=SERVE_HELP["function"])] = None,
) -> None:
    """Run one reward service on stdin/stdout (JSON lines), or over HTTP with --http.

    The service's own settings (URLs, keys, folders) come from its environment, never from
    requests: render reads BOTGRPO_VLM_BASE_URL, BOTGRPO_VLM_MODEL, BOTGRPO_VLM_API_KEY and
    BOTGRPO_RENDER_SAVE_DIR.
    """
    from botgrpo_rewards.http_server import HttpSettings
    from botgrpo_rewards.run import serve_runner, start_service

    settings = HttpSettings.from_env(token=token, allow_remote_without_token=allow_remote_without_token,
                                     max_body_bytes=max_body_bytes, timeout_s=http_timeout_s)
    from botgrpo_rewards.registry import service_backend

    try:  # the one start-up path (python -m botgrpo_rewards takes it too); a failed start is a
        runner = start_service(service_backend(name, function), http, max_inflight, settings)  # ServiceStartError: one line
    except ValueError as err:  # unknown name, or an address that cannot be served
        raise UserError(str(err)) from None
    try:
        code = serve_runner(runner, http, settings)
    except ValueError as err:  # e.g. the port is taken
        raise UserError(str(err)) from None
    raise typer.Exit(code)


@reward_app.command(cls=listing_choices(service="botgrpo_rewards.registry:SERVICES"))
def score(
    file: Annotated[Path, typer.Argument(help="JSONL rollout file (or .gz): one {id, prompt, completion, reference, options?} per line.")],
    service: Annotated[Optional[list[str]], typer.Option("--service", "-s", help=f"Reward service: {CHOICES}. Repeat as NAME=WEIGHT to score with several at once (their weighted sum; lines' options go to the first), e.g. -s react -s render=0.5.")] = None,
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Where to write (default: FILE with .scored.jsonl); never the input.")] = None,
    workers: Workers = 1,
    deadline_ms: Annotated[Optional[int], typer.Option("--deadline-ms", min=1, help=f"Per-request deadline for every line (default: each line's, else {DEFAULT_DEADLINE_MS}).")] = None,
    command: Annotated[Optional[str], typer.Option("--command", help="Run this command as the service instead of the built-in one (any program speaking protocol v1).")] = None,
    resume: Annotated[bool, typer.Option("--resume", help="Continue a killed run: keep the lines already in OUTPUT.partial and score the rest.")] = False,
    function: Annotated[Optional[str], typer.Option("--function", help="Score with this Python reward function (MODULE:NAME or path/to/file.py:NAME), instead of --service.")] = None,
    url: Annotated[Optional[list[str]], typer.Option("--url", help="Score on this running service (http://HOST:PORT; repeat for several; token from $BOTGRPO_REWARD_TOKEN), instead of --service.")] = None,
) -> None:
    """Score a JSONL rollout file through a reward service; writes the lines with the scores added.

    Results are written in input order as they come, to OUTPUT.partial, renamed to OUTPUT at the
    end; every input line gets one output line (a malformed one with status error and the reason).
    """
    from botgrpo_cli.reward_client.rollouts import count_rollouts
    from botgrpo_cli.reward_client.score_file import check_paths, check_resume, partial_path

    target = _target_of(service or [], command, function, url or [])
    services = _services_of(service or []) or {target: 1.0}
    if command is not None and len(services) > 1:
        raise UserError("--command runs one service; score with several only through the built-in ones")
    if command is None and target == "service":
        for name in services:
            check_service_name(name)
    out_path = output or file.with_name(file.name.removesuffix(".gz").removesuffix(".jsonl") + ".scored.jsonl")
    check_paths(file, out_path)
    if resume and not partial_path(out_path).exists():
        done = " (it is already complete)" if out_path.exists() else ""
        raise UserError(f"--resume: there is no {partial_path(out_path)} to continue{done}; run without --resume")
    from botgrpo_cli.redact import redact

    # what a --resume must match, as written next to the partial output: without secrets
    made_from = redact({"services": services, "command": command, "function": function, "url": url or []})
    if resume:
        check_resume(file, out_path, deadline_ms, made_from)
    total = count_rollouts(file)
    if not total:
        raise UserError(f"{file} has no rollout lines")
    _score_lines(file, out_path, total, services, workers, shlex.split(command) if command else None, deadline_ms,
                 resume, made_from, function, url or [])


def _target_of(service: list[str], command: str | None, function: str | None, url: list[str]) -> str:
    """What scores: "service" (-s, with or without --command), "function" or "remote"; one of them."""
    given = [flag for flag, on in (("--service", bool(service)), ("--function", function is not None),
                                   ("--url", bool(url))) if on]
    if len(given) != 1:
        raise UserError("say what scores the file with one of --service NAME, --function FILE.py:NAME or --url "
                        f"http://HOST:PORT{'' if not given else f' (got {chr(32).join(given)})'}")
    if command is not None and given[0] != "--service":
        raise UserError("--command replaces a --service's program; it does not go with --function or --url")
    return {"--service": "service", "--function": "function", "--url": "remote"}[given[0]]


def _services_of(values: list[str]) -> dict[str, float]:
    """-s NAME [-s NAME=WEIGHT ...] -> {name: weight} in order (weight 1 when not given)."""
    services: dict[str, float] = {}
    for value in values:
        name, _, weight = (part.strip() for part in value.partition("="))
        try:
            w = float(weight) if weight else 1.0
        except ValueError:
            w = math.nan
        if not math.isfinite(w):
            raise UserError(f"--service {value!r}: the weight after '=' must be a finite number, e.g. render=0.5")
        if name in services:
            raise UserError(f"--service {name} is given twice; name each service once")
        services[name] = w
    return services


MAX_PROBLEM_LINES = 20  # malformed lines reported one by one; the rest are counted


class _LazyPool:
    """Starts the reward pool on the first request: a file of only malformed lines needs no service."""

    def __init__(self, services: dict[str, float], workers: int, command: list[str] | None,
                 function: str | None = None, url: list[str] | None = None, deadline_ms: int | None = None):
        self.args, self.pool = (services, workers, command, function, url, deadline_ms), None

    def submit(self, request):
        if self.pool is None:
            from botgrpo_cli.reward_client.opening import open_pool

            services, workers, command, function, url, deadline_ms = self.args
            several = services if len(services) > 1 or any(w != 1.0 for w in services.values()) else {}
            # a failed start is a UserError
            self.pool = open_pool(next(iter(services)), workers, command, several, function=function, url=url or None,
                                  deadline_ms=deadline_ms or 60_000)
        return self.pool.submit(request)

    def close(self) -> None:
        if self.pool is not None:
            self.pool.close()


def _score_lines(file: Path, out_path: Path, total: int, services: dict[str, float], workers: int,
                 command: list[str] | None, deadline_ms: int | None, resume: bool, made_from: dict,
                 function: str | None = None, url: list[str] | None = None) -> None:
    from rich.markup import escape

    from botgrpo_cli.console import console, progress_bar
    from botgrpo_cli.reward_client.score_file import score_file

    problems = [0]

    def on_problem(line) -> None:
        problems[0] += 1
        if problems[0] <= MAX_PROBLEM_LINES:
            console.print(f"[yellow]line {line.lineno}:[/] {escape(line.problem)} (kept in the output with status "
                          "error)", highlight=False, soft_wrap=True)

    pool = _LazyPool(services, workers, command, function, url, deadline_ms)
    try:
        with progress_bar("scoring with {task.fields[service]}", transient=False) as bar:
            task = bar.add_task("score", total=total, service=" + ".join(services))
            stats = score_file(file, out_path, pool.submit, deadline_ms=deadline_ms, resume=resume,
                               progress=lambda n: bar.advance(task, n), on_problem=on_problem,
                               made_from=made_from)
        pool_stats = pool.pool.stats if pool.pool is not None else {"restarts": 0, "resent": 0}
    finally:
        pool.close()
    if problems[0] > MAX_PROBLEM_LINES:
        console.print(f"[yellow]{problems[0] - MAX_PROBLEM_LINES} more malformed lines[/] (kept in the output with status error)")
    _print_summary(stats, pool_stats, out_path)


def _print_summary(stats, pool_stats: dict, out_path: Path) -> None:
    from rich.table import Table

    from botgrpo_cli.console import out

    s = stats.summary.result()
    kept = f" ({stats.kept} kept from the earlier run)" if stats.kept else ""
    table = Table(title=f"reward score: {stats.kept + stats.written} lines{kept} -> {out_path}")
    table.add_column("what")
    table.add_column("value", justify="right")
    for status, n in s["counts"].items():
        table.add_row(f"status {status}", str(n))
    table.add_row("mean score (ok)", f"{s['mean_score']:.4f}")
    for name, mean in s["metrics"].items():
        table.add_row(f"mean {name}", f"{mean:.4f}")
    rate = stats.scored / stats.seconds if stats.seconds > 0 else 0.0
    table.add_row("throughput", f"{rate:.1f} lines/s")
    table.add_row("restarts / resent", f"{pool_stats['restarts']} / {pool_stats['resent']}")
    if pool_stats.get("endpoint_failures"):  # --url: calls that failed and were sent to another endpoint
        table.add_row("endpoint failures", str(pool_stats["endpoint_failures"]))
    if pool_stats.get("stray_answers"):  # answers for ids never sent: dropped, never given to a line
        table.add_row("stray answers", str(pool_stats["stray_answers"]))
    if pool_stats.get("shared"):  # identical lines in flight together, scored once (deterministic services)
        table.add_row("answered from an identical line", str(pool_stats["shared"]))
    out.print(table)


def register(app: typer.Typer) -> None:
    from botgrpo_cli.cli import reward_render

    reward_render.register(reward_app)
    app.add_typer(reward_app, name="reward", help="Reward services: serve one, or score rollout files offline.")
