"""docs/extending.md's examples run: the plugin in examples/extending/plugin (a task, a reward
service and an advantage estimator, each one entry point) trains a step as an installed package
would, and its service answers as a child process. (The reward-function example is trained in
test_bring_your_own.py.)"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")  # Python 3.11+: reads the plugin's pyproject.toml as pip would

from botgrpo_cli.algos import ADVANTAGES
from botgrpo_cli.config import load_config
from botgrpo_cli.trainer import train
from botgrpo_rewards import registry

PLUGIN = Path(__file__).resolve().parents[2] / "examples" / "extending" / "plugin"


def _reset_lookups() -> None:
    from botgrpo_tasks import TASKS

    for lookup in (registry.SERVICES.forget, TASKS.forget, ADVANTAGES.forget_plugins):  # entry points read again
        lookup()


@pytest.fixture
def installed_plugin(tmp_path, monkeypatch):
    """The plugin as pip would install it: its package importable and its entry points (read from its
    pyproject.toml) in a dist-info folder, for this process and the service processes it starts."""
    project = tomllib.loads((PLUGIN / "pyproject.toml").read_text())["project"]
    site = tmp_path / "site"
    dist = site / "botgrpo_example_plugin-0.1.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n")
    (dist / "entry_points.txt").write_text("".join(
        f"[{group}]\n" + "".join(f"{name} = {target}\n" for name, target in points.items()) + "\n"
        for group, points in project["entry-points"].items()))
    for path in (str(site), str(PLUGIN)):
        monkeypatch.syspath_prepend(path)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(PLUGIN), str(site), os.environ.get("PYTHONPATH", "")]))
    _reset_lookups()
    yield
    monkeypatch.undo()  # the plugin off sys.path first, so no later lookup can find it again
    _reset_lookups()


def test_the_example_plugin_trains_with_its_task_service_and_estimator(installed_plugin, tiny_model, tmp_path):
    from botgrpo_tasks import list_tasks

    assert "keyword" in list_tasks() and "keyword" in registry.SERVICES and "mean_baseline" in ADVANTAGES.names()
    cfg = load_config(None, sets=["run.task=keyword", "algo.advantage=mean_baseline", "algo.advantage_options={scale: 2.0}",
                                  "rollout.prompts_per_step=2", "rollout.group_size=4", "rollout.max_new_tokens=16",
                                  "run.threads=1", "optim.micro_batch_size=4", "log.tensorboard=false",
                                  "run.save_every=0", "run.steps=1"])
    cfg.model.name_or_path, cfg.run.out_dir = str(tiny_model("arith_synth")), str(tmp_path / "run")
    result = train(cfg)
    (record,) = result.metrics
    assert record["reward/masked"] == 0 and "reward/found" in record and "success" in record
