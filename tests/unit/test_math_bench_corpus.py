"""`botgrpo bench rewards --service math --corpus FILE`: the benchmark measures on a graded corpus the
user gives (docs/rewards.md: a `reward score` request line plus `correct` and `group`), and ships none."""

from __future__ import annotations

import importlib.util
import io
import json
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from botgrpo_rewards import bench as service_bench
from botgrpo_rewards.bench import CorpusError
from botgrpo_rewards.math.bench import GENERATED, load_corpus, run

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "rollouts" / "math_graded.jsonl"


def test_the_example_corpus_reads_as_documented():
    pairs = load_corpus(EXAMPLE)
    assert [p.group for p in pairs] == ["fractions"] * 2 + ["integers"] * 2 + ["gsm8k"] * 2 + ["minerva"] * 2
    assert [p.correct for p in pairs] == [True, False, True, True, True, False, True, False]
    assert (pairs[0].gold, pairs[0].options) == ("0.5", {})


@pytest.mark.parametrize("line, says", [
    ("not json", "line 2: not JSON"),
    ('{"completion": "x", "reference": {"answer": "1"}}', "line 2: expected"),  # no verdict
    ('{"completion": "x", "reference": {"answer": "1"}, "correct": "yes"}', "line 2: expected"),
    ('{"completion": "x", "reference": "1", "correct": true}', "line 2: expected"),
])
def test_a_line_that_does_not_fit_is_one_error_naming_it(tmp_path, line, says):
    path = tmp_path / "c.jsonl"
    path.write_text('{"completion": "x", "reference": {"answer": "1"}, "correct": true}\n' + line + "\n")
    with pytest.raises(CorpusError, match=says):
        load_corpus(path)


def test_an_empty_or_missing_corpus_is_one_error(tmp_path, capsys):
    (tmp_path / "empty.jsonl").write_text("\n")
    with pytest.raises(CorpusError, match="has no rows"):
        load_corpus(tmp_path / "empty.jsonl")
    assert service_bench.main(["math", "1", "5", "--corpus", str(tmp_path / "nope.jsonl")]) == 2
    assert "nope.jsonl" in capsys.readouterr().err  # the child's one line; nothing started


def test_the_benchmark_grades_the_corpus_beside_generated_pairs():
    out = io.StringIO()
    figures = run(Console(file=out, width=200), workers=1, n=12, repeats=1, corpus=EXAMPLE)
    groups = figures["groups"]
    assert groups[GENERATED][0] == 12 and figures["pairs_per_run"] == 20
    assert {g: groups[g][:2] for g in ("fractions", "integers", "gsm8k", "minerva")} == {
        "fractions": (2, 2), "integers": (2, 2), "gsm8k": (2, 2), "minerva": (2, 2)}  # (pairs, ours right)
    assert all(0 <= theirs <= n for n, _, theirs in groups.values())
    assert "minerva" in out.getvalue() and "math-verify" in out.getvalue()


def test_bench_rewards_hands_the_corpus_to_the_services_benchmark(monkeypatch):
    from botgrpo_cli.cli import app
    from botgrpo_cli.cli import bench_rewards

    seen = []
    monkeypatch.setattr(bench_rewards, "_child_bench", lambda argv: seen.append(argv) or 0)
    result = CliRunner().invoke(app, ["bench", "rewards", "--service", "math", "--corpus", str(EXAMPLE)])
    assert result.exit_code == 0, result.output
    assert seen[0][-2:] == ["--corpus", str(EXAMPLE)] and seen[0][1:3] == ["-m", "botgrpo_rewards.bench"]
    refused = CliRunner().invoke(app, ["bench", "rewards", "--service", "math", "--http", "--corpus", str(EXAMPLE)])
    assert refused.exit_code == 1 and "--corpus is measured by the service's own benchmark" in str(refused.exception)


def test_the_research_corpus_of_the_test_tables_reads_as_a_corpus(tmp_path):
    """research/scripts/math_corpus.py writes the test data (the graded table, the peer-format table,
    the peer corpora) in the benchmark's format: every row reads back."""
    import math_peer_corpora
    from math_cases import CASES
    from math_peer_cases import peer_rows

    spec = importlib.util.spec_from_file_location("math_corpus", ROOT / "research" / "scripts" / "math_corpus.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    path = tmp_path / "corpus.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in script.corpus_rows()))
    pairs = load_corpus(path)
    assert len(pairs) == sum(c != "hostile" for c, *_ in CASES) + len(peer_rows()) + len(math_peer_corpora.load())
    assert {"table", "minerva", "math_verify_core"} <= {p.group for p in pairs}
