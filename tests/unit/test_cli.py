from typer.testing import CliRunner

from botgrpo_cli import __version__
from botgrpo_cli.cli import app

runner = CliRunner()


def test_help_lists_every_command():
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    for name in ("train", "eval", "reward", "bench", "bootstrap"):
        assert name in result.output


def test_version():
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert __version__ in result.output


def test_bench_step_refuses_set_with_vs_before_running_anything():
    result = runner.invoke(app, ["bench", "step", "--vs", "trl", "--set", "optim.lr=0"])
    assert result.exit_code != 0 and "--set" in str(result.exception)


def test_bench_step_refuses_bad_mini_batch_counts_before_running_anything():
    for bad in ("1,two", "0,2"):
        result = runner.invoke(app, ["bench", "step", "--algos", "grpo", "--mini-batches", bad])
        assert result.exit_code != 0 and "--mini-batches" in str(result.exception)
