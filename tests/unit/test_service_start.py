"""A backend whose start() fails: one line on stderr and exit 1 (python -m botgrpo_rewards), the same
one-line ServiceStartError at the CLI boundary (botgrpo reward serve: both take run.start_service),
never a traceback; the half-started backend is closed."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from botgrpo_cli.cli import app
from botgrpo_cli.cli import main as cli_main
from botgrpo_cli.errors import UserError
from botgrpo_rewards.__main__ import main
from botgrpo_rewards.backend import Backend
from botgrpo_rewards.protocol import ServiceStartError
from botgrpo_rewards.registry import SERVICES
from botgrpo_rewards.run import EXIT_START_FAILED, EXIT_USAGE, one_line, run_service

CLOSED: list[str] = []


class FailingStart(Backend):
    """Fails like a launcher does: a first line that says why, then a multi-line call log."""

    name = "failing"

    def start(self) -> None:
        raise RuntimeError("the widget binary is not executable\nCall log:\n  - spawn /opt/widget EACCES")

    def close(self) -> None:
        CLOSED.append(self.name)


@pytest.fixture
def failing_service(monkeypatch):
    monkeypatch.setitem(SERVICES, "failing", f"{__name__}:FailingStart")
    CLOSED.clear()
    return "failing"


def test_one_line_keeps_the_first_line_and_the_type():
    assert one_line(RuntimeError("why\nCall log:\n  - detail")) == "RuntimeError: why"
    assert one_line(ValueError("")) == "ValueError"
    assert one_line(type("Error", (Exception,), {})("\n  spawn EACCES\nmore")) == "spawn EACCES"


def test_run_service_prints_one_line_and_exits_1(capsys):
    assert run_service(FailingStart()) == EXIT_START_FAILED == 1
    err = capsys.readouterr().err
    assert err.splitlines() == [
        "error: reward service 'failing' could not start: RuntimeError: the widget binary is not executable"]
    assert CLOSED == ["failing"]


def test_module_main_exit_codes(failing_service, capsys):
    assert main([failing_service]) == EXIT_START_FAILED
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "not executable" in err and "Traceback" not in err
    assert main(["no-such-service"]) == EXIT_USAGE == 2
    assert "unknown reward service" in capsys.readouterr().err


def test_cli_serve_reports_a_failed_start_as_one_line(failing_service, capsys):
    result = CliRunner().invoke(app, ["reward", "serve", failing_service])
    assert isinstance(result.exception, ServiceStartError)  # what the CLI boundary prints as its one line
    message = str(result.exception)
    assert "\n" not in message and "could not start: RuntimeError: the widget binary is not executable" in message
    assert CLOSED == ["failing"]
    with pytest.raises(SystemExit) as done:  # through the real entry point: one red line, exit 1
        cli_main(["reward", "serve", failing_service])
    assert done.value.code == 1
    out = capsys.readouterr()
    assert "Traceback" not in out.out + out.err and "the widget binary is not executable" in out.out + out.err


def test_both_entry_points_refuse_an_unknown_name_and_a_bad_address_before_loading(capsys):
    assert main(["no-such-service"]) == EXIT_USAGE
    assert "unknown reward service 'no-such-service'; known: function, math, react, render" in capsys.readouterr().err
    assert main(["math", "--http", "not an address"]) == EXIT_USAGE
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    for argv in (["reward", "serve", "no-such-service"], ["reward", "serve", "math", "--http", "not an address"]):
        result = CliRunner().invoke(app, argv)
        assert isinstance(result.exception, UserError), argv
    assert "unknown reward service 'no-such-service'; known: function, math, react, render" in str(
        CliRunner().invoke(app, ["reward", "serve", "no-such-service"]).exception)


def test_one_start_up_path(monkeypatch):
    """`botgrpo reward serve` and `python -m botgrpo_rewards` (which every RewardPool child runs)
    both start the service through run.start_service."""
    import botgrpo_rewards.run as run

    calls = []

    def spy(*args, **kwargs):
        calls.append(args[0])
        raise ServiceStartError("stopped here")

    monkeypatch.setattr(run, "start_service", spy)
    assert main(["math"]) == EXIT_START_FAILED
    assert isinstance(CliRunner().invoke(app, ["reward", "serve", "react"]).exception, ServiceStartError)
    assert calls == ["math", "react"]
