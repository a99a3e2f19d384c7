"""The `react` and `aime` tasks: data, splits, prompts, options and the errors users can hit."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from botgrpo_tasks import get_task
from botgrpo_tasks.aime import DEFAULT_TEMPLATE
from botgrpo_tasks.errors import TaskError
from botgrpo_tasks.react import load_specs

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "aime_sample.jsonl"
SAMPLE_ROWS = [json.loads(line) for line in SAMPLE.read_text().splitlines()]
IMPORT = re.compile(r"^\s*import\b(?:[^;\"']*?\bfrom\b)?\s*[\"']([^\"']+)[\"']", re.MULTILINE)  # what a TSX file imports


# ---------------------------------------------------------------- react


def test_react_has_enough_distinct_specs():
    specs = load_specs()
    assert len(specs) >= 40
    assert len({s.id for s in specs}) == len(specs)
    assert len({s.component for s in specs}) == len(specs)
    assert len({s.code for s in specs}) == len(specs)
    assert len({s.spec for s in specs}) == len(specs)


def test_react_split_is_fixed_and_disjoint():
    a, b = get_task("react", seed=0), get_task("react", seed=7)
    train, evals = [e.id for e in a.train_examples()], [e.id for e in a.eval_examples()]
    assert train == [e.id for e in b.train_examples()] and evals == [e.id for e in b.eval_examples()]
    assert len(train) >= 32 and len(evals) >= 8
    assert not set(train) & set(evals)
    assert all(i.startswith("react/train/") for i in train) and all(i.startswith("react/eval/") for i in evals)


@pytest.mark.parametrize("spec", load_specs(), ids=lambda s: s.id)
def test_react_reference_is_self_contained(spec):
    code = spec.code
    assert re.search(rf"^export default function {spec.component}\(", code, re.MULTILINE), "default export named as in the spec"
    assert set(IMPORT.findall(code)) <= {"react"}
    assert "require(" not in code
    # Deterministic render: no clock or randomness (a Date built from props is fine).
    assert not re.search(r"Date\.now|Math\.random|new Date\(\)|performance\.now|crypto\.", code)


def test_react_examples_carry_prompt_and_reference_code():
    task = get_task("react")
    by_id = {s.id: s for s in load_specs()}
    for ex in task.train_examples() + task.eval_examples():
        spec = by_id[ex.id.rsplit("/", 1)[1]]
        assert ex.reference == {"spec": ex.prompt, "reference_code": spec.code, "requirements": spec.requirements()}
        assert ex.reference["requirements"]["component"] == spec.component
        assert f"`{spec.component}`" in ex.prompt and spec.spec in ex.prompt
        assert "```tsx" in ex.prompt and "default-exports" in ex.prompt
    assert (task.service, task.success_metric, task.eval_metrics) == ("react", "syntax_ok", ("compile", "syntax_ok", "types_ok", "spec_ok", "all_ok"))
    assert task.service_options == {"spec": True}
    assert task.max_new_tokens >= 1024


def test_react_render_judge_switches_service():
    task = get_task("react", render_judge=True)
    assert task.service == "render"
    assert task.service_options == {"judge": "similarity"}
    assert task.success_metric in task.eval_metrics == ("rendered", "similarity")
    assert get_task("react").service == "react"  # the class attribute was not changed


def test_react_format_prompt_uses_chat_template():
    class Tok:
        chat_template = "x"

        def apply_chat_template(self, messages, tokenize, add_generation_prompt):
            return f"<user>{messages[0]['content']}</user><assistant>"

    task = get_task("react")
    ex = task.eval_examples()[0]
    assert task.format_prompt(ex, Tok()) == f"<user>{ex.prompt}</user><assistant>"
    assert task.format_prompt(ex, None) == ex.prompt


@pytest.mark.parametrize("options, message", [({"render_judge": "yes"}, "true or false"), ({"n_train": 5}, "no option")])
def test_react_bad_options(options, message):
    with pytest.raises(TaskError, match=message):
        get_task("react", **options)


# ---------------------------------------------------------------- aime


def _write_csv(path: Path, rows: list[dict], problem: str, answer: str) -> None:
    import csv

    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["id", problem, answer])
        writer.writerows([r["id"], r["problem"], r["answer"]] for r in rows)


def _write_parquet(path: Path, rows: list[dict], problem: str, answer: str) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = {"id": [r["id"] for r in rows], problem: [r["problem"] for r in rows], answer: [r["answer"] for r in rows]}
    pq.write_table(pa.table(table), path)


def _problems(examples) -> list[str]:
    return [e.prompt.split("Problem: ", 1)[1] for e in examples]


def test_aime_loads_jsonl_with_default_columns():
    task = get_task("aime", path=str(SAMPLE))
    train, evals = task.train_examples(), task.eval_examples()
    assert len(train) + len(evals) == len(SAMPLE_ROWS) and len(evals) == round(0.2 * len(SAMPLE_ROWS))
    answers = {r["problem"]: str(r["answer"]) for r in SAMPLE_ROWS}
    for ex in train + evals:
        problem = ex.prompt.split("Problem: ", 1)[1]
        assert ex.reference == {"answer": answers[problem]}
        assert ex.prompt == DEFAULT_TEMPLATE.replace("{problem}", problem)
        assert "\\boxed{}" in ex.prompt and "step by step" in ex.prompt
    assert not {e.id for e in train} & {e.id for e in evals}
    assert (task.service, task.success_metric, task.service_options) == ("math", "correct", {})


@pytest.mark.parametrize("fmt", ["csv", "parquet", "json"])
def test_aime_loads_other_formats_with_renamed_columns(tmp_path, fmt):
    path = tmp_path / f"problems.{fmt}"
    if fmt == "csv":
        _write_csv(path, SAMPLE_ROWS, "question", "final")
    elif fmt == "parquet":
        _write_parquet(path, SAMPLE_ROWS, "question", "final")
    else:
        path.write_text(json.dumps([{"question": r["problem"], "final": r["answer"], "id": r["id"]} for r in SAMPLE_ROWS]))
    task = get_task("aime", path=str(path), problem_column="question", answer_column="final", id_column="id")
    reference = get_task("aime", path=str(SAMPLE), id_column="id")
    for got, want in [(task.train_examples(), reference.train_examples()), (task.eval_examples(), reference.eval_examples())]:
        assert [(e.id, e.prompt, e.reference) for e in got] == [(e.id, e.prompt, e.reference) for e in want]


def test_aime_loads_a_dataset_folder_by_split(tmp_path):
    """A folder's files are read by split: the file names say which (train.jsonl, test.jsonl)."""
    (tmp_path / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in SAMPLE_ROWS[:8]))
    (tmp_path / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in SAMPLE_ROWS[8:]))
    task = get_task("aime", path=str(tmp_path), eval_path=str(tmp_path), eval_split="test", id_column="id")
    assert [e.id for e in task.train_examples()] == [r["id"] for r in SAMPLE_ROWS[:8]]
    assert [e.id for e in task.eval_examples()] == [r["id"] for r in SAMPLE_ROWS[8:]]
    with pytest.raises(TaskError, match=r"no .* file of split 'validation' \(splits found: test, train\)"):
        get_task("aime", path=str(tmp_path), split="validation").train_examples()


def test_aime_split_ignores_seed_and_row_order(tmp_path):
    shuffled = tmp_path / "shuffled.jsonl"
    shuffled.write_text("".join(json.dumps(r) + "\n" for r in reversed(SAMPLE_ROWS)))
    held_out = sorted(_problems(get_task("aime", seed=0, path=str(SAMPLE)).eval_examples()))
    assert sorted(_problems(get_task("aime", seed=3, path=str(SAMPLE)).eval_examples())) == held_out
    assert sorted(_problems(get_task("aime", path=str(shuffled)).eval_examples())) == held_out
    assert len(get_task("aime", path=str(SAMPLE), eval_fraction=0.5).eval_examples()) == 6


def test_aime_eval_path_template_and_steps(tmp_path):
    task = get_task("aime", path=str(SAMPLE), eval_path=str(SAMPLE), prompt_template="Q: {problem}\nA:", steps=True)
    assert len(task.train_examples()) == len(task.eval_examples()) == len(SAMPLE_ROWS)
    assert task.eval_examples()[0].id == "aime/eval/0"
    assert task.eval_examples()[0].prompt == f"Q: {SAMPLE_ROWS[0]['problem']}\nA:"
    assert task.service_options == {"steps": True}
    # a dataset with rounded decimal golds asks the math service for a tolerance
    assert get_task("aime", path=str(SAMPLE), rel_tol=1e-3).service_options == {"rel_tol": 1e-3}


def test_aime_missing_columns_lists_the_ones_it_has(tmp_path):
    path = tmp_path / "p.csv"
    _write_csv(path, SAMPLE_ROWS, "question", "final")
    with pytest.raises(TaskError) as err:
        get_task("aime", path=str(path)).train_examples()
    message = str(err.value)
    assert "'problem', 'answer'" in message and "id, question, final" in message and "problem_column=" in message


@pytest.mark.parametrize("name, content", [("empty.jsonl", ""), ("header.csv", "problem,answer\n"), ("blank.json", "[]")])
def test_aime_empty_dataset(tmp_path, name, content):
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(TaskError, match="has no rows"):
        get_task("aime", path=str(path)).train_examples()


def test_aime_empty_parquet(tmp_path):
    path = tmp_path / "empty.parquet"
    _write_parquet(path, [], "problem", "answer")
    with pytest.raises(TaskError, match="has no rows"):
        get_task("aime", path=str(path)).eval_examples()


@pytest.mark.parametrize("path", ["missing/problems.jsonl", "./nowhere", "/no/such/dir/x.parquet"])
def test_aime_missing_file(path):
    with pytest.raises(TaskError, match="not found"):
        get_task("aime", path=path).train_examples()


def test_aime_bad_rows_and_files(tmp_path):
    blank = tmp_path / "blank.jsonl"
    blank.write_text(json.dumps({"problem": "What is 1+1?", "answer": None}) + "\n")
    with pytest.raises(TaskError, match="row 0 has an empty answer"):
        get_task("aime", path=str(blank), eval_path=str(SAMPLE)).train_examples()
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"problem": "x", "answer": 1}\n{not json\n')
    with pytest.raises(TaskError, match=r"broken.jsonl: line 2 \(byte 31\) is not JSON"):
        get_task("aime", path=str(broken)).train_examples()
    text = tmp_path / "problems.txt"
    shutil.copy(SAMPLE, text)
    with pytest.raises(TaskError, match="unsupported file type '.txt'"):
        get_task("aime", path=str(text)).train_examples()
    dup = tmp_path / "dup.jsonl"
    dup.write_text(SAMPLE.read_text().replace('"s02"', '"s01"'))
    with pytest.raises(TaskError, match="repeated values"):
        get_task("aime", path=str(dup), id_column="id").train_examples()


@pytest.mark.parametrize(
    "options, message",
    [
        ({}, "needs path="),
        ({"path": str(SAMPLE), "eval_fraction": 1.5}, "between 0 and 1"),
        ({"path": str(SAMPLE), "eval_fraction": 0.2, "eval_path": str(SAMPLE)}, "not both"),
        ({"path": str(SAMPLE), "prompt_template": "no placeholder"}, "{problem}"),
        ({"path": str(SAMPLE), "columns": "x"}, "no option"),
        ({"path": str(SAMPLE), "steps": "yes"}, "true or false"),
        ({"path": str(SAMPLE), "rel_tol": 0.5}, "from 0 to 0.1"),
    ],
)
def test_aime_bad_options(options, message):
    with pytest.raises(TaskError, match=re.escape(message)):
        get_task("aime", **options)


def test_aime_too_few_rows_to_split(tmp_path):
    one = tmp_path / "one.jsonl"
    one.write_text(SAMPLE.read_text().splitlines()[0] + "\n")
    with pytest.raises(TaskError, match="too few"):
        get_task("aime", path=str(one)).train_examples()
