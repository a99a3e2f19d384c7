"""The `botgrpo` command line: one Typer app, one error boundary.

Each command lives in its own module and only parses options, then calls library code.
"""

from __future__ import annotations

import os
import sys
from typing import Annotated, Optional

import typer

from botgrpo_cli import __version__
from botgrpo_cli.console import console
from botgrpo_cli.errors import Interrupted, UserError
from botgrpo_rewards.protocol import ServiceStartError
from botgrpo_tasks.errors import TaskError

app = typer.Typer(
    name="botgrpo",
    help="RL for language models with token-level rewards (BoT-GRPO and the GRPO family).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"botgrpo {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        Optional[bool],
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit."),
    ] = None,
) -> None:
    """RL for language models with token-level rewards (BoT-GRPO and the GRPO family)."""


def _register() -> None:
    # Imported here so `botgrpo --help` stays fast and each module stays independent.
    from botgrpo_cli.cli import bench, bootstrap, compare, evaluate, reward, setup, train, vllm

    for module in (train, evaluate, reward, bench, bootstrap, setup, compare, vllm):
        module.register(app)


_register()


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the app; user errors become one red line and exit code 1."""
    try:
        app(args=argv)  # standalone: usage errors and --help are handled by click itself
    except Interrupted as err:  # SIGINT / SIGTERM: one line saying where to resume
        console.print(f"[red]interrupted:[/] {err}", soft_wrap=True)
        sys.exit(err.exit_code)
    except (UserError, TaskError, ServiceStartError) as err:  # mistakes the user can fix: one line, exit 1
        if os.environ.get("BOTGRPO_DEBUG") == "1":
            console.print_exception()
        console.print(f"[bold red]error:[/] {err}", soft_wrap=True)  # one line, never wrapped
        sys.exit(1)
    except KeyboardInterrupt:
        console.print("[red]interrupted[/]")
        sys.exit(130)
