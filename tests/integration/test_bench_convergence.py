"""`botgrpo bench convergence` end to end: real training subprocesses, the real react service, the
three outputs agreeing with each other and with the runs' evaluations, and resumption."""

from __future__ import annotations

import itertools
import json
import os
from pathlib import Path

import pytest
from PIL import Image
from typer.testing import CliRunner

from botgrpo_cli.cli import app

ROOT = Path(__file__).resolve().parents[2]
TIMING = ("time/", "perf/")  # wall-clock fields differ between identical steps
SMALL = ["rollout.prompts_per_step=2", "rollout.group_size=4", "rollout.max_new_tokens=64"]


@pytest.fixture(scope="module")
def cache() -> None:
    os.environ.setdefault("BOTGRPO_CACHE", str(ROOT / ".cache" / "botgrpo"))


def _args(out: Path, steps: int = 2) -> list[str]:
    sets = [a for s in SMALL for a in ("--set", s)]
    return ["bench", "convergence", "--task", "react_synth", "--algos", "grpo,bot_grpo", "--seeds", "1",
            "--steps", str(steps), "--eval-every", "1", "--eval-prompts", "4", "--eval-samples", "2",
            "--target", "0.5,0.9", "--parallel", "2", "--threads", "1", "--out", str(out), "--work", str(out / "runs"),
            *sets]


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _table(md: str) -> tuple[list[str], dict[str, list[str]]]:
    """The first Markdown table: its header and algorithm -> cells."""
    lines = md.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| "))
    block = itertools.takewhile(lambda line: line.startswith("|"), lines[start:])
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in block if not line.startswith("|---")]
    header = rows[0]
    return header, {r[0]: r for r in rows[1:]}


def _check_outputs(out: Path) -> dict:
    summary = json.loads((out / "convergence.json").read_text())
    assert list(summary["algorithms"]) == ["grpo", "bot_grpo"] and summary["baseline"] == "grpo"
    with Image.open(out / "convergence.png") as img:
        assert img.size[0] > 300 and img.size[1] > 200
    header, table = _table((out / "convergence.md").read_text())
    base_counts = []
    for algo, s in summary["algorithms"].items():
        # Recompute from the raw evaluations: per-prompt counts -> success rate per step.
        evals = sorted(_jsonl(out / "runs" / f"{algo}-s0" / "evals.jsonl"), key=lambda e: e["step"])
        rates = [(e["step"], sum(e["counts"]) / (e["prompts"] * e["samples"])) for e in evals]
        assert [st for st, _ in rates] == [0, 1, 2] == s["curve"]["steps"]
        assert s["curve"]["median"] == pytest.approx([r for _, r in rates])
        assert s["final"]["median"] == pytest.approx(rates[-1][1])
        for target in (0.5, 0.9):
            first = next((st for st, r in rates if r >= target), None)
            entry = s["targets"][f"{target:g}"]
            assert entry["per_seed"] == {"0": first} and entry["median"] == first
            cell = table[algo][header.index(f"steps to {target:g}")]
            assert cell.split()[0] == (">2" if first is None else f"{first:g}")
        final_cell = table[algo][header.index("final all_ok")]
        assert float(final_cell.split()[0]) == pytest.approx(s["final"]["median"], abs=6e-4)  # .3f rounds half to even
        base_counts.append(evals[0]["counts"])
        assert {"compile", "spec_ok"} <= set(evals[0]["means"])  # the compile rate with the spec beside it
        seconds = s["runs"]["0"]["seconds"]  # training seconds at each evaluated step, for curves against time
        assert [st for st, _ in seconds] == [0, 1, 2] and seconds[0][1] == 0
        assert seconds[-1][1] == pytest.approx(s["runs"]["0"]["train_seconds"], abs=0.02)
        spec = [e["means"]["spec_ok"] for e in evals]
        assert s["runs"]["0"]["guard"] == {"metric": "spec_ok", "base": spec[0], "min": min(spec[1:]),
                                           "final": spec[-1], "gamed": min(spec[1:]) < spec[0] - 0.1}
    assert base_counts[0] == base_counts[1]  # step 0: the same base model, prompts and sampling seed
    return summary


def test_runs_every_pair_writes_consistent_outputs_and_resumes(cache, tmp_path):
    out = tmp_path / "bench"
    first = CliRunner().invoke(app, _args(out))
    assert first.exit_code == 0, first.output
    summary = _check_outputs(out)
    assert "bot_grpo" in first.output and "convergence.md" in first.output

    # As if grpo had been interrupted after step 1: no result, no last checkpoint (its evaluations
    # are kept, so the rerun needs no evaluation).
    grpo, bot = out / "runs" / "grpo-s0", out / "runs" / "bot_grpo-s0"
    before = _jsonl(grpo / "train" / "metrics.jsonl")
    (grpo / "result.json").unlink()
    for path in sorted((grpo / "train" / "checkpoints" / "step-000002").rglob("*"), reverse=True):
        path.unlink() if path.is_file() else path.rmdir()
    (grpo / "train" / "checkpoints" / "step-000002").rmdir()
    bot_stamp = ((bot / "result.json").stat().st_mtime_ns, (bot / "log.txt").stat().st_size)

    again = CliRunner().invoke(app, _args(out))
    assert again.exit_code == 0, again.output
    assert "1 finished pair(s) kept" in again.output and "started bot_grpo" not in again.output
    assert ((bot / "result.json").stat().st_mtime_ns, (bot / "log.txt").stat().st_size) == bot_stamp
    after = _jsonl(grpo / "train" / "metrics.jsonl")
    assert after[0] == before[0]  # step 1 was not re-run (its wall-clock fields are unchanged)
    assert [r["step"] for r in after] == [1, 2] and (grpo / "train" / "checkpoints" / "step-000002").is_dir()
    same = {k: v for k, v in after[1].items() if not k.startswith(TIMING)}
    assert same == {k: v for k, v in before[1].items() if not k.startswith(TIMING)}  # exact resume
    resumed = _check_outputs(out)
    assert resumed["algorithms"]["grpo"]["curve"] == summary["algorithms"]["grpo"]["curve"]

    # The work directory moved to another checkout (records committed, the model cached elsewhere
    # under the same recipe-hash name): its finished pairs still carry over.
    stored = json.loads((out / "runs" / "base_model.json").read_text())["path"]
    (out / "runs" / "base_model.json").write_text(json.dumps({"path": "/elsewhere/models/" + Path(stored).name}))
    moved = CliRunner().invoke(app, _args(out))
    assert moved.exit_code == 0 and "2 finished pair(s) kept" in moved.output, moved.output

    changed = CliRunner().invoke(app, _args(out, steps=3))  # other settings in the same work dir: refused
    assert changed.exit_code != 0 and "other settings" in str(changed.exception)


def test_bad_input_is_refused_before_any_run(cache, tmp_path):
    runner = CliRunner()
    for extra, needle in ((["--algos", "grpo,nope"], "unknown preset"), (["--metric", "pass@4"], "--eval-samples 4"),
                          (["--metric", "bogus"], "react_synth measures"), (["--target", "1.5"], "(0, 1]"),
                          (["--eval-prompts", "5000"], "held-out prompts"), (["--set", "optim.lrr=1"], "lr")):
        result = runner.invoke(app, [*_args(tmp_path / "x"), *extra])
        assert result.exit_code != 0 and needle in str(result.exception), (extra, result.output)
    assert not (tmp_path / "x").exists()
