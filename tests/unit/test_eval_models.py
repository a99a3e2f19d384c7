"""What `botgrpo eval --model` accepts: hub ids, model folders, checkpoints, run directories."""

from __future__ import annotations

import json

import pytest

from botgrpo_cli.cli.evaluate import parse_task_options
from botgrpo_cli.errors import UserError
from botgrpo_cli.evaluation.models import Target, resolve


def _model(path):
    path.mkdir(parents=True)
    (path / "config.json").write_text("{}")
    return path


def test_model_folder_and_hub_id(tmp_path):
    folder = _model(tmp_path / "m")
    assert resolve(str(folder)) == [Target("model", str(folder))]
    assert resolve("Qwen/Qwen2.5-0.5B") == [Target("model", "Qwen/Qwen2.5-0.5B")]


def test_run_directory_gives_every_checkpoint_in_step_order(tmp_path):
    run = tmp_path / "run"
    for step in (20, 5):
        _model(run / "checkpoints" / f"step-{step:06d}" / "model")
        (run / "checkpoints" / f"step-{step:06d}" / "state.json").write_text(json.dumps({"step": step, "data_position": 0}))
    (run / "checkpoints" / ".tmp-step-000030").mkdir()  # an interrupted save is ignored
    targets = resolve(str(run))
    assert [(t.label, t.step) for t in targets] == [("step-000005", 5), ("step-000020", 20)]
    assert targets[1].path == str(run / "checkpoints" / "step-000020" / "model")
    assert resolve(str(run / "checkpoints" / "step-000020")) == [targets[1]]


@pytest.mark.parametrize("make, message", [
    (lambda p: None, "does not exist"),
    (lambda p: p.mkdir(), "not a model folder"),
    (lambda p: (p / "checkpoints").mkdir(parents=True), "has no checkpoints"),
])
def test_bad_model_paths(tmp_path, make, message):
    path = tmp_path / "x"
    make(path)
    with pytest.raises(UserError, match=message):
        resolve(str(path))


def test_task_options_parse_json_values():
    assert parse_task_options(["path=a.jsonl", "render_judge=true", "eval_fraction=0.5"]) == {
        "path": "a.jsonl", "render_judge": True, "eval_fraction": 0.5}
    with pytest.raises(UserError, match="key=value"):
        parse_task_options(["novalue"])
