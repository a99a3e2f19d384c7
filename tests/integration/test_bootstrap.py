"""`botgrpo bootstrap` for real: corpora checked by esbuild, the built models reloaded through
transformers' Auto classes, the cache, the measured base success rate and the CLI."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer
from typer.testing import CliRunner

from botgrpo_cli.bootstrap import bootstrap, read_info
from botgrpo_cli.bootstrap.sft import SftConfig, encode_pairs, train_sft
from botgrpo_cli.bootstrap.model import make_model
from botgrpo_cli.bootstrap.tokenizer import train_tokenizer
from botgrpo_cli.cli import app, main
from botgrpo_cli.errors import UserError
from botgrpo_tasks import get_task

ROOT = Path(__file__).resolve().parents[2]
NODE_DIR = ROOT / "rewards" / "react"
# Reads JSON strings one per line and prints 1/0 per program: does esbuild's TSX parser accept it?
ESBUILD_BATCH = """
const esbuild = require('esbuild');
const lines = require('fs').readFileSync(0, 'utf8').split('\\n').filter(Boolean);
const ok = lines.map((l) => {
  try { esbuild.transformSync(JSON.parse(l), {loader: 'tsx'}); return 1; } catch (e) { return 0; }
});
process.stdout.write(JSON.stringify(ok));
"""


def esbuild_accepts(programs: list[str]) -> list[bool]:
    if shutil.which("node") is None or not (NODE_DIR / "node_modules" / "esbuild").is_dir():
        pytest.fail("node and rewards/react/node_modules are needed: run `make setup`")
    proc = subprocess.run(["node", "-e", ESBUILD_BATCH], cwd=NODE_DIR, input="\n".join(map(json.dumps, programs)),
                          capture_output=True, text=True, timeout=120, check=True)
    return [bool(x) for x in json.loads(proc.stdout)]


def test_clean_corpus_programs_compile_and_faulty_ones_do_not():
    items = get_task("react_synth").corpus_items(2000)
    verdicts = esbuild_accepts([it.completion for it in items])
    wrong = [(sorted(it.faults), it.completion) for it, ok in zip(items, verdicts) if ok == bool(it.faults)]
    assert not wrong, wrong[:3]


def test_sft_is_deterministic_for_a_seed():
    pairs = get_task("arith_synth").corpus(64, seed=3)
    weights = []
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as the build does; extra threads only spin on a shared 2-core box
    for _ in range(2):
        torch.manual_seed(3)
        tok = train_tokenizer((p + c for p, c in pairs), 300)
        model = make_model("tiny", len(tok), tok.eos_token_id, tok.pad_token_id)
        train_sft(model, encode_pairs(tok, pairs), tok.pad_token_id, SftConfig(steps=3, batch_size=8, warmup=1), seed=3)
        weights.append(torch.cat([p.detach().flatten() for p in model.parameters()]))
    torch.set_num_threads(threads)
    assert torch.equal(weights[0], weights[1])


@pytest.mark.parametrize("fixture", ["tiny_model_dir", "tiny_arith_model_dir"])
def test_reloads_with_identical_token_ids(fixture, request):
    path: Path = request.getfixturevalue(fixture)
    task = get_task(read_info(path)["task"])
    tok = AutoTokenizer.from_pretrained(path)
    raw = json.loads((path / "tokenizer.json").read_text())
    from tokenizers import Tokenizer

    reference = Tokenizer.from_str(json.dumps(raw))
    texts = [p + c for p, c in task.corpus(50)] + ["Zoë und Jürgen: café ☃ 中文 🙂\n\n\\boxed{12}"]
    for text in texts:
        assert tok(text, add_special_tokens=False)["input_ids"] == reference.encode(text).ids
        assert tok.decode(reference.encode(text).ids) == text
    assert tok.eos_token is not None and tok.pad_token_id is not None and tok.eos_token_id != tok.pad_token_id
    model = AutoModelForCausalLM.from_pretrained(path)
    assert model.config.tie_word_embeddings and model.config.vocab_size == len(tok)
    assert model.generation_config.eos_token_id == tok.eos_token_id


# react_synth compiles 30-50% of the time and follows the whole spec less often (all_ok about 12%
# measured); arith_synth's warm start is tuned to a base pass@1 of 10-30% (about 16% measured).
@pytest.mark.parametrize(("fixture", "band"), [("tiny_model_dir", (0.05, 0.4)), ("tiny_arith_model_dir", (0.1, 0.35))])
def test_base_success_rate_in_band(fixture, band, request):
    info = read_info(request.getfixturevalue(fixture))
    assert info["n_measured"] >= 200
    assert band[0] <= info["base_success_rate"] <= band[1], info["base_metrics"]


def test_second_call_is_cached(tiny_model_dir):
    start = time.perf_counter()
    again = bootstrap("react_synth")
    assert again == tiny_model_dir and time.perf_counter() - start < 2.0
    assert not list(tiny_model_dir.parent.glob(f".{tiny_model_dir.name}.*"))  # no temp dirs left behind


def test_cli_reports_the_cached_model(tiny_model_dir):
    result = CliRunner().invoke(app, ["bootstrap", "--task", "react_synth"])
    assert result.exit_code == 0, result.output
    assert str(tiny_model_dir) in result.output and "base all_ok: " in result.output


def test_cli_unknown_task_is_one_line_listing_tasks(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["bootstrap", "--task", "nope"])
    assert exc.value.code == 1
    err = capsys.readouterr().err
    assert err.count("error:") == 1 and "unknown task 'nope'" in err and "arith_synth" in err and "react_synth" in err


def test_math_service_agrees_with_the_arith_corpus(math_backend):
    from botgrpo_rewards.protocol import ScoreRequest

    task = get_task("arith_synth")
    for i, it in enumerate(task.corpus_items(60)):
        req = ScoreRequest(id=str(i), completion=it.completion, prompt=it.prompt,
                           reference={"answer": str(it.problem.answer())}, options=task.service_options)
        m = math_backend.score(req, time.monotonic() + 30).metrics
        if it.slips:
            assert m["steps_wrong"] >= len(it.slips), (it.completion, m)
        else:
            assert m["correct"] == 1.0 and m["steps_wrong"] == 0.0, (it.completion, m)


def test_out_refuses_a_directory_that_is_not_a_build(tmp_path):
    keep = tmp_path / "notes.txt"
    keep.write_text("mine")
    with pytest.raises(UserError, match="not a bootstrapped model"):
        bootstrap("react_synth", out=tmp_path)
    assert keep.read_text() == "mine"


def test_task_options_give_a_variant_its_own_model_key(tmp_path, monkeypatch):
    from botgrpo_cli.bootstrap.build import _recipe
    from botgrpo_cli.bootstrap.cache import model_dir

    default, variant = (_recipe(get_task("react_synth", **o), "tiny") for o in ({}, {"sites": 2}))
    assert variant["options"] == {"sites": 2} and variant["sft"]["steps"] == 1500 and "task_sft" not in default
    assert model_dir("react_synth", "tiny", 0, default) != model_dir("react_synth", "tiny", 0, variant)
    # the CLI passes --task-option through to the task (a bad one is one clear line, nothing built)
    monkeypatch.setenv("BOTGRPO_CACHE", str(tmp_path))
    bad = CliRunner().invoke(app, ["bootstrap", "--task", "react_synth", "--task-option", "sites=9"])
    assert bad.exit_code != 0 and "sites must be an integer from 0 to 4" in str(bad.exception)
    assert not (tmp_path / "models").exists()
