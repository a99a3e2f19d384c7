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


def test_bench_step_title_names_the_shape_the_runs_trained_at(monkeypatch):
    """--set may change the batch the presets train at: the table's title says the shape they ran
    (the runs themselves are replaced here; the title is what is checked)."""
    import botgrpo_cli.bench.step as step

    def timed(names, steps, task, threads, model, repeats, counts, sets, bounds):
        return [step.StepFigures(name, 1.0, 0.5, 0.1, 0.1, 0.3, 100.0, steps) for name in names]

    monkeypatch.setattr(step, "run", timed)
    for sets, shape in (([], "8 prompts x 8 completions x 48 new tokens"),
                        (["--set", "rollout.group_size=4", "--set", "rollout.max_new_tokens=16"],
                         "8 prompts x 4 completions x 16 new tokens")):
        result = runner.invoke(app, ["bench", "step", "--algos", "grpo", *sets])
        assert result.exit_code == 0, result.output
        assert f"training step on react_synth: {shape}, medians" in " ".join(result.output.split())
