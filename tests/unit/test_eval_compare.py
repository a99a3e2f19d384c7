"""`botgrpo compare` on two small fake metrics.jsonl files, and its bad inputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PIL import Image

from typer.testing import CliRunner

from botgrpo_cli.cli import app, main
from botgrpo_cli.errors import UserError
from botgrpo_cli.evaluation.compare import compare_runs, curve, read_metrics, reached, resolve_metric, wall_clock


def _run(root: Path, name: str, lines: list[dict]) -> Path:
    run = root / name
    run.mkdir(parents=True)
    (run / "metrics.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return run


@pytest.fixture
def runs(tmp_path) -> list[Path]:
    # run a logs every step at 2 s/step; run b logs every 2nd step at 1 s/step and evaluates once (3 s)
    a = _run(tmp_path, "grpo", [{"step": s, "success": v, "eval/success": v, "time/step_s": 2.0, "reward/mean": v}
                                for s, v in [(1, 0.2), (2, 0.5), (3, 0.85), (4, 0.9)]])
    b = _run(tmp_path, "bot_grpo", [{"step": 2, "success": 0.3, "eval/success": 0.4, "time/step_s": 1.0},
                                    {"step": 4, "success": 0.6, "eval/success": 0.7, "time/step_s": 1.0,
                                     "time/eval_s": 3.0},
                                    {"step": 6, "success": 0.7, "eval/success": 0.75, "time/step_s": 1.0}])
    return [a, b]


def test_wall_time_steps_to_target_and_final_values(runs):
    a, b = (read_metrics(r) for r in runs)
    assert wall_clock(a) == [2.0, 4.0, 6.0, 8.0]
    assert wall_clock(b) == [2.0, 7.0, 9.0]  # step gap x step time, plus the eval's 3 s
    ca, cb = curve("a", a, "eval/success"), curve("b", b, "eval/success")
    assert reached(ca, 0.8) == (3, 6.0) and reached(cb, 0.8) is None
    assert cb.values[-1] == 0.75 and cb.total_wall_s == 9.0 and cb.last_step == 6


def test_compare_writes_one_png_and_a_table(runs, tmp_path):
    png, md, text = compare_runs(runs, tmp_path / "cmp", target=0.8)  # default: eval/success
    with Image.open(png) as im:
        assert im.size[0] > im.size[1] > 100  # two panels side by side
    rows = text.splitlines()
    assert rows[0].startswith("| run | final eval/success")
    assert rows[2] == "| grpo | 0.900 | 0.900 | 3 | 6.0 | 4 | 8.0 |"
    assert rows[3] == "| bot_grpo | 0.750 | 0.750 | not reached | – | 6 | 9.0 |"
    assert text in md.read_text()


def test_short_metric_names_resolve_to_logged_keys():
    runs = {"a": [{"step": 1, "reward/correct": 1.0, "success": 0.0}], "b": [{"step": 1, "reward/correct": 0.0}]}
    assert resolve_metric(runs, "correct") == "reward/correct"
    with pytest.raises(UserError, match="pick --metric from: reward/correct, success"):
        resolve_metric(runs, "mean")


def test_compare_cli(runs, tmp_path, capsys):
    with pytest.raises(SystemExit) as done:
        main(["compare", *map(str, runs), "--metric", "reward/mean", "--out", str(tmp_path / "o")])
    assert done.value.code == 1  # bot_grpo never logged reward/mean
    assert "not every run logged reward/mean" in capsys.readouterr().err
    result = CliRunner().invoke(app, ["compare", *map(str, runs), "--target", "0.8", "--out", str(tmp_path / "o")])
    assert result.exit_code == 0, result.output
    assert "| grpo | 0.900 | 0.900 | 3 | 6.0 | 4 | 8.0 |" in result.output
    assert (tmp_path / "o" / "compare.png").is_file() and (tmp_path / "o" / "compare.md").is_file()


@pytest.mark.parametrize("content, message", [
    (None, "no metrics.jsonl"),
    ("", "is empty"),
    ('{"step": 1}\nnot json\n', "line 2 is not JSON"),
    ('{"loss": 1}\n', "no integer \"step\""),
    ('{"step": 1, "success": 0.5}\n', "has no time/step_s"),
])
def test_bad_runs_are_clear_errors(tmp_path, content, message):
    run = tmp_path / "run"
    run.mkdir()
    if content is not None:
        (run / "metrics.jsonl").write_text(content)
    with pytest.raises(UserError, match=message):
        compare_runs([run], tmp_path / "out", metric="success")


def test_curves_panel_names_are_accepted_as_metrics():
    """curves.png calls reward/mean "reward": `compare --metric reward` means the same curve."""
    runs = {"a": [{"step": 1, "reward/mean": 0.5, "completion/length_mean": 9.0}],
            "b": [{"step": 1, "reward/mean": 0.1, "completion/length_mean": 7.0}]}
    assert resolve_metric(runs, "reward") == "reward/mean"
    assert resolve_metric(runs, "length") == "completion/length_mean"
