"""`botgrpo setup react`: install what an installed botgrpo cannot carry in its wheel."""

from __future__ import annotations

from typing import Annotated

import typer

from botgrpo_cli.console import console


def register(app: typer.Typer) -> None:
    setup_app = typer.Typer(help="Install what pip cannot: the Node packages of the React and render services.",
                            no_args_is_help=True)

    @setup_app.command("react")
    def react(force: Annotated[bool, typer.Option("--force", help="reinstall even when installed")] = False) -> None:
        """Install the React and render services' Node packages (npm ci from botgrpo's package-lock.json)
        into $BOTGRPO_CACHE or ~/.cache/botgrpo. Needs Node.js 20 and npm on PATH."""
        from botgrpo_cli.errors import UserError
        from botgrpo_rewards.node_setup import NodeSetupError, setup_react

        try:
            home = setup_react(force=force)
        except NodeSetupError as err:
            raise UserError(str(err)) from None
        console.print(f"Node packages for the react and render services: {home / 'node_modules'}")

    app.add_typer(setup_app, name="setup")
