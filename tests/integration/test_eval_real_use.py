"""`botgrpo eval` as real use needs it: what is scored (split, count, whole file), progress lines in
a log, a prompt that does not fit the model's context, chat options (tiny models, real services)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from botgrpo_cli.cli import app, main
from botgrpo_cli.errors import UserError
from botgrpo_cli.rollout.base import check_context, context_limit

ROOT = Path(__file__).resolve().parents[2]
AIME_SAMPLE = ROOT / "tests" / "data" / "aime_sample.jsonl"  # 12 problems
FAST = ["--n", "2", "--max-new-tokens", "16", "--threads", "1", "--batch-size", "4"]


def _run(*args: str):
    return CliRunner().invoke(app, ["eval", *FAST, *args])


def test_aime_says_what_it_scores_and_all_scores_the_whole_file(tiny_arith_model_dir, tmp_path):
    model = str(tiny_arith_model_dir)
    held = _run("--task", "aime", "--task-option", f"path={AIME_SAMPLE}", "--model", model, "--out", str(tmp_path / "a"))
    assert held.exit_code == 0, held.output
    assert "scoring 2 of the 2 problems of the eval split (eval split 2, train split 10); --split all" in held.output
    scope = json.loads((tmp_path / "a" / "eval.json").read_text())["scope"]
    assert scope == {"split": "eval", "problems": 2, "split_size": 2, "eval_size": 2, "train_size": 10}
    assert "Scored: 2 of the 2 problems of the eval split" in (tmp_path / "a" / "eval.md").read_text()
    whole = _run("--task", "aime", "--task-option", f"path={AIME_SAMPLE}", "--model", model, "--split", "all",
                 "--out", str(tmp_path / "b"))
    assert whole.exit_code == 0, whole.output
    report = json.loads((tmp_path / "b" / "eval.json").read_text())
    assert report["scope"]["problems"] == 12 and len(report["evaluations"][0]["problems"]) == 12
    # Not a terminal: one plain progress line per generated chunk (4 completions = 2 problems).
    lines = [ln for ln in whole.output.splitlines() if "sampled" in ln and "problems," in ln]
    assert len(lines) == 6 and lines[-1].startswith("model: sampled 12/12 problems")


def test_a_prompt_past_the_context_is_one_clear_error(tiny_arith_model_dir, tmp_path, capsys):
    long_problem = tmp_path / "long.jsonl"
    long_problem.write_text(json.dumps({"problem": "add these: " + " + ".join(["1"] * 400), "answer": "400"}) + "\n")
    with pytest.raises(SystemExit) as done:
        main(["eval", *FAST, "--task", "aime", "--task-option", f"path={long_problem}", "--task-option", f"eval_path={long_problem}",
              "--model", str(tiny_arith_model_dir), "--out", str(tmp_path / "c")])
    err = " ".join(capsys.readouterr().err.split())
    assert done.value.code == 1 and "Traceback" not in err
    assert "does not fit the model's context of 512 tokens" in err


def test_context_limit_reads_the_model_not_a_huge_tokenizer_limit():
    class Cfg:
        max_position_embeddings = 8192

    class Model:
        config = Cfg()

    class Tok:
        model_max_length = int(1e30)  # what GGUF and many hub tokenizers say

    assert context_limit(Model(), Tok()) == 8192
    assert check_context(8000, 192, 8192) is None
    assert "at most 192" in check_context(8000, 193, 8192)  # generation past the context: a warning
    with pytest.raises(UserError, match="does not fit"):
        check_context(8192, 1, 8192)


def test_system_prompt_and_template_kwargs_are_recorded(tiny_arith_model_dir, tmp_path):
    result = _run("--task", "arith_synth", "--model", str(tiny_arith_model_dir), "--limit", "1",
                  "--system-prompt", "Answer briefly.", "--chat-template-kwarg", "enable_thinking=false",
                  "--thinking-budget", "8", "--out", str(tmp_path / "d"))
    assert result.exit_code == 0, result.output
    cfg = json.loads((tmp_path / "d" / "eval.json").read_text())["config"]
    assert (cfg["system_prompt"], cfg["chat_template_kwargs"], cfg["thinking_budget"]) == \
        ("Answer briefly.", {"enable_thinking": False}, 8)


def test_eval_samples_under_the_trainers_precision_rule(tiny_arith_model_dir, tmp_path):
    """auto keeps a 0.1M-parameter model in fp32 (bf16 is slower there); bfloat16 forces autocast and
    the samples still score; the choice is printed and recorded per evaluated model."""
    model = str(tiny_arith_model_dir)
    auto = _run("--task", "arith_synth", "--model", model, "--limit", "2", "--out", str(tmp_path / "auto"))
    assert auto.exit_code == 0, auto.output
    assert "precision: fp32 (" in " ".join(auto.output.split())
    forced = _run("--task", "arith_synth", "--model", model, "--limit", "2", "--autocast", "bfloat16",
                  "--out", str(tmp_path / "bf16"))
    assert forced.exit_code == 0, forced.output
    report = json.loads((tmp_path / "bf16" / "eval.json").read_text())
    assert report["evaluations"][0]["precision"].startswith("bf16 autocast")
    assert report["config"]["autocast"] == "bfloat16" and report["scope"]["problems"] == 2
    bad = _run("--task", "arith_synth", "--model", model, "--autocast", "fp8", "--out", str(tmp_path / "bad"))
    assert bad.exit_code == 1 and "--autocast must be one of auto, bfloat16, off" in " ".join(str(bad.exception).split())


def test_eval_from_python_samples_with_the_config_it_is_given(tiny_arith_model_dir, tmp_path):
    """The library call: EvalOptions carries the training config's sections, and eval samples by
    them (here rollout.max_new_tokens, read through SamplingParams.from_config)."""
    from botgrpo_cli.config import Config, RolloutConfig, RunConfig
    from botgrpo_cli.evaluation import EvalOptions, run_eval
    from botgrpo_tasks import get_task

    config = Config(run=RunConfig(task="arith_synth", seed=1), rollout=RolloutConfig(max_new_tokens=2))
    report = run_eval(EvalOptions(model=str(tiny_arith_model_dir), out=tmp_path, config=config, n=2, limit=2))
    samples = [s for p in report["evaluations"][0]["problems"] for s in p["samples"]]
    assert len(samples) == 4 and max(s["tokens"] for s in samples) == 2 < get_task("arith_synth").max_new_tokens
    assert report["config"]["max_new_tokens"] == 2 and report["config"]["seed"] == 1
