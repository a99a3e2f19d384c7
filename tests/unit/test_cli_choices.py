"""Choice lists in CLI help come from the registries (cli/options.listing_choices), so a preset,
service, task, judge, split or size added to its registry is in the help without editing it."""

from __future__ import annotations

import subprocess
import sys

import click
import pytest
import typer

from botgrpo_cli.cli import app
from botgrpo_cli.cli.options import CHOICES, registry_names

# (command path, parameter, registry): every parameter whose help lists a registry's names
LISTED = [
    (["train"], "algo", "botgrpo_cli.algos:PRESETS"),
    (["bench", "convergence"], "algos", "botgrpo_cli.algos:PRESETS"),
    (["reward", "serve"], "name", "botgrpo_rewards.registry:SERVICES"),
    (["reward", "score"], "service", "botgrpo_rewards.registry:SERVICES"),
    (["bench", "rewards"], "service", "botgrpo_rewards.registry:SERVICES"),
    (["eval"], "task", "botgrpo_tasks:list_tasks"),
    (["eval"], "split", "botgrpo_cli.evaluation.runner:SPLITS"),
    (["eval"], "judge", "botgrpo_cli.evaluation.pairwise:JUDGES"),
    (["eval"], "autocast", "botgrpo_cli.config:AUTOCAST_SETTINGS"),
    (["bootstrap"], "size", "botgrpo_cli.bootstrap.build:RECIPES"),
]


def _command(path: list[str]) -> tuple[click.Command, click.Context]:
    cmd: click.Command = typer.main.get_command(app)
    ctx = click.Context(cmd, info_name="botgrpo")
    for name in path:
        cmd = cmd.get_command(ctx, name)  # type: ignore[attr-defined]
        ctx = click.Context(cmd, info_name=name, parent=ctx)
    return cmd, ctx


def _help_of(path: list[str], param: str) -> str:
    cmd, ctx = _command(path)
    cmd.get_help(ctx)  # renders the help, which fills the choices in
    [p] = [p for p in cmd.params if p.name == param]
    return p.help  # type: ignore[attr-defined]


@pytest.mark.parametrize("path,param,registry", LISTED, ids=[f"{' '.join(p)} {n}" for p, n, _ in LISTED])
def test_help_lists_every_name_in_the_registry(path, param, registry):
    names = registry_names(registry)
    text = _help_of(path, param)
    assert len(names) >= 2 and CHOICES not in text
    assert [n for n in names if n not in text] == []


def test_a_preset_added_to_the_registry_shows_up_in_train_help(monkeypatch):
    from botgrpo_cli.algos import PRESETS

    monkeypatch.setitem(PRESETS, "my_new_algo", PRESETS["grpo"])
    assert "my_new_algo" in _help_of(["train"], "algo")


def _all_commands(cmd: click.Command, path: list[str]):
    yield path, cmd
    if isinstance(cmd, click.Group):
        for name in cmd.list_commands(click.Context(cmd)):
            yield from _all_commands(cmd.get_command(click.Context(cmd), name), [*path, name])  # type: ignore[arg-type]


def test_no_help_keeps_an_unfilled_placeholder():
    """Every parameter whose help says CHOICES names a registry (a forgotten listing_choices would
    show the raw placeholder)."""
    left = []
    for path, cmd in _all_commands(typer.main.get_command(app), []):
        if path and not isinstance(cmd, click.Group):
            _, ctx = _command(path)
            cmd.get_help(ctx)
        left += [f"{' '.join(path)} {p.name}" for p in cmd.params if CHOICES in (getattr(p, "help", None) or "")]
    assert left == []


def test_top_level_help_imports_no_torch():
    """The names are read when a command's help is shown, never while the app is built."""
    code = ("import sys\nfrom botgrpo_cli.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
            "print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip().splitlines()[-1] == "False"
