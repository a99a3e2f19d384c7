"""`botgrpo eval` end to end on the bootstrapped tiny models with the real reward services
(math, react on Node, render on Chromium). Numbers are low: the tests check the pipeline and
the reports, not quality."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from botgrpo_cli.cli import app, main

ROOT = Path(__file__).resolve().parents[2]
AIME_SAMPLE = ROOT / "tests" / "data" / "aime_sample.jsonl"
SMALL = ["--n", "2", "--k", "1,2", "--limit", "2", "--max-new-tokens", "24", "--threads", "1"]


def _eval(*args: str) -> dict:
    result = CliRunner().invoke(app, ["eval", *SMALL, *args])
    assert result.exit_code == 0, f"{result.output}\n{result.exception!r}"
    out = Path(args[args.index("--out") + 1])
    assert (out / "eval.md").is_file()
    return json.loads((out / "eval.json").read_text())


def _check_table(entry: dict, n: int, ks: list[int]) -> None:
    problems = entry["problems"]
    assert all(p["n"] == n and len(p["samples"]) == n for p in problems)
    for p in problems:
        assert p["correct"] == sum(s["success"] for s in p["samples"])
        assert set(p["pass_at_k"]) == {f"pass@{k}" for k in ks}
        for s in p["samples"]:
            assert s["status"] in ("ok", "error", "timeout") and isinstance(s["text"], str)
            assert (s["score"] is None) == (s["status"] != "ok") and isinstance(s["metrics"], dict)
    mean_c = sum(p["correct"] / p["n"] for p in problems) / len(problems)
    assert entry["aggregates"]["pass@1"] == pytest.approx(mean_c)
    assert entry["aggregates"]["samples"] == n * len(problems)


def test_arith_synth_and_a_run_directory(tiny_arith_model_dir, tmp_path):
    # a run directory of two checkpoints holding the same weights: same seed -> same figures
    run = tmp_path / "run"
    for step in (1, 2):
        ckpt = run / "checkpoints" / f"step-{step:06d}"
        shutil.copytree(tiny_arith_model_dir, ckpt / "model")
        (ckpt / "state.json").write_text(json.dumps({"step": step, "data_position": 0}))
    report = _eval("--task", "arith_synth", "--model", str(run), "--out", str(tmp_path / "out"))
    assert [e["step"] for e in report["evaluations"]] == [1, 2]
    for entry in report["evaluations"]:
        _check_table(entry, 2, [1, 2])
        assert {"correct", "steps_wrong", "success_rate", "pass@2"} <= set(entry["aggregates"])
    assert report["evaluations"][0]["aggregates"] == report["evaluations"][1]["aggregates"]
    assert report["plot"] == "metrics_vs_step.png" and (tmp_path / "out" / report["plot"]).stat().st_size > 1000
    md = (tmp_path / "out" / "eval.md").read_text()
    assert "| pass@2 |" in md and "| step-000001 | step-000002 |" in md.replace("| figure ", "")


def test_aime_sample(tiny_arith_model_dir, tmp_path):
    report = _eval("--task", "aime", "--task-option", f"path={AIME_SAMPLE}", "--model", str(tiny_arith_model_dir),
                   "--out", str(tmp_path / "out"), "--top-k", "20", "--repetition-penalty", "1.1")
    entry = report["evaluations"][0]
    assert "Also sampled with top-k 20, repetition penalty 1.1." in (tmp_path / "out" / "eval.md").read_text()
    _check_table(entry, 2, [1, 2])
    assert entry["problems"][0]["id"].startswith("aime/eval/") and "extracted" in entry["aggregates"]
    assert report["config"]["task_options"] == {"path": str(AIME_SAMPLE)}


def test_react_task_without_render(tiny_model_dir, tmp_path):
    report = _eval("--task", "react", "--no-render", "--model", str(tiny_model_dir), "--out", str(tmp_path / "out"))
    _check_table(report["evaluations"][0], 2, [1, 2])
    assert {"syntax_ok", "types_ok"} <= set(report["aggregates"]) and "rendered" not in report["aggregates"]
    assert not (tmp_path / "out" / "screens").exists()


def test_react_synth_against_another_model(tiny_model_dir, tiny_arith_model_dir, tmp_path):
    out = tmp_path / "out"
    report = _eval("--task", "react_synth", "--model", str(tiny_model_dir), "--against", str(tiny_arith_model_dir),
                   "--judge", "similarity", "--out", str(out))
    model, other = report["evaluations"][0], report["against"]
    _check_table(model, 2, [1, 2])
    for figure in ("syntax_ok", "types_ok", "rendered", "similarity"):
        assert figure in model["aggregates"], figure
    # the arithmetic model writes no React, so nothing of it renders: each render of A is a win, each
    # pair where neither rendered a tie; a failed render pass (either side) leaves the pair undecided
    assert other["aggregates"]["rendered"] == 0
    a_samples = [s for p in model["problems"] for s in p["samples"]]
    b_samples = [s for p in other["problems"] for s in p["samples"]]
    known = [sa["metrics"].get("rendered") for sa, sb in zip(a_samples, b_samples) if "rendered" in sb["metrics"]]
    win = report["win_rate"]
    assert (win["wins"], win["ties"], win["losses"]) == (known.count(1.0), known.count(0.0), 0)
    assert win["undecided"] == 4 - win["pairs"]
    assert win["ci_low"] <= win["win_rate"] <= win["ci_high"]
    for s in a_samples:
        assert s["screenshot"] is None or (out / s["screenshot"]).is_file()
    sheet = out / report["contact_sheets"][0]["path"]
    assert sheet.is_file() and sheet.read_text().count('class="card') == 4
    assert "Win rate of model over against" in (out / "eval.md").read_text()


def _fails(capsys, *args: str) -> str:
    with pytest.raises(SystemExit) as done:
        main(["eval", *args])
    assert done.value.code == 1
    return " ".join(capsys.readouterr().err.split())  # the console wraps long lines


def test_bad_inputs_are_one_clear_error(tmp_path, capsys):
    wrong = tmp_path / "wrong.jsonl"
    wrong.write_text('{"question": "1+1?", "solution": 2}\n' * 6)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    out = ["--out", str(tmp_path / "o")]
    assert "lacks column(s) 'problem', 'answer'" in _fails(
        capsys, "--task", "aime", "--task-option", f"path={wrong}", "--model", "m", *out)
    assert "has no rows" in _fails(capsys, "--task", "aime", "--task-option", f"path={empty}", "--model", "m", *out)
    assert "is larger than --n 2" in _fails(capsys, "--task", "arith_synth", "--n", "2", "--k", "1,4", "--model", "m", *out)
    assert "does not exist" in _fails(capsys, "--task", "arith_synth", "--model", str(tmp_path / "nope"), *out)
    assert "unknown task 'nope'" in _fails(capsys, "--task", "nope", "--model", "m", *out)
    assert not (tmp_path / "o").exists()  # nothing written for a failed start
