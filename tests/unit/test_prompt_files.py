"""Prompt files as careless users write them (task `prompts`, tasks/prompt_files.py): folders of
mixed formats, Latin-1 bytes, list and message columns, unknown roles. Each is read right or is one
line naming the file, the row and what to do."""

from __future__ import annotations

import json
import logging

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from botgrpo_tasks import get_task
from botgrpo_tasks.errors import TaskError


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def _parquet(path, rows):
    pq.write_table(pa.Table.from_pylist(rows), path)


def _prompts(task) -> list[str]:
    return sorted(e.prompt for e in task.train_examples() + task.eval_examples())


def _one_line(err) -> str:
    message = str(err.value)
    assert "\n" not in message
    return message


def test_a_folder_of_mixed_formats_is_read_whole_and_other_files_are_named_once(tmp_path, caplog):
    _jsonl(tmp_path / "a.jsonl", [{"prompt": f"j{i}", "answer": i} for i in range(3)])
    (tmp_path / "b.csv").write_text("prompt,answer\nc0,0\nc1,1\nc2,2\n", encoding="utf-8")
    _parquet(tmp_path / "c.parquet", [{"prompt": f"p{i}", "answer": i} for i in range(3)])
    (tmp_path / "README.md").write_text("my prompts")
    (tmp_path / ".hidden.jsonl").write_text("not json at all")
    with caplog.at_level(logging.WARNING):
        task = get_task("prompts", path=str(tmp_path))
        assert _prompts(task) == ["c0", "c1", "c2", "j0", "j1", "j2", "p0", "p1", "p2"]
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and "README.md (not a data file)" in warnings[0] and "hidden" not in warnings[0]
    ex = next(e for e in task.train_examples() + task.eval_examples() if e.prompt == "c1")
    assert ex.reference == {"answer": 1}  # CSV numbers stay numbers, as from the other formats


def test_a_folder_with_split_names_reads_the_split_asked_for(tmp_path, caplog):
    _jsonl(tmp_path / "train.jsonl", [{"prompt": f"t{i}"} for i in range(5)])
    (tmp_path / "test-00.csv").write_text("prompt\ne0\ne1\n")
    _jsonl(tmp_path / "notes.jsonl", [{"prompt": "stray"}])
    task = get_task("prompts", path=str(tmp_path), eval_path=str(tmp_path), eval_split="test")
    assert sorted(e.prompt for e in task.train_examples()) == [f"t{i}" for i in range(5)]
    assert sorted(e.prompt for e in task.eval_examples()) == ["e0", "e1"]
    assert any("notes.jsonl (its name gives no split)" in r.getMessage() for r in caplog.records)
    with pytest.raises(TaskError, match="no .* file of split 'validation'.*splits found: test, train"):
        get_task("prompts", path=str(tmp_path), split="validation").train_examples()


@pytest.mark.parametrize("name", ["p.jsonl", "p.csv"])
def test_latin1_bytes_are_one_line_with_the_file_and_byte_offset(tmp_path, name):
    head = '{"prompt": "ok"}\n' if name.endswith(".jsonl") else "prompt\nok\n"
    body = '{"prompt": "caf\xe9"}\n' if name.endswith(".jsonl") else "caf\xe9\n"
    (tmp_path / name).write_bytes(head.encode() + body.encode("latin-1"))
    with pytest.raises(TaskError) as err:
        get_task("prompts", path=str(tmp_path / name)).train_examples()
    offset, line = len(head.encode()) + body.index("\xe9"), head.count("\n") + 1
    assert f"{name}: byte {offset} (line {line}) is not UTF-8" in _one_line(err)


def test_a_line_that_is_not_json_is_named_with_its_byte_offset(tmp_path):
    first, before = '{"prompt": "a"}\n', '{"prompt": "é", '
    (tmp_path / "p.jsonl").write_text(first + before + "oops}\n", encoding="utf-8")
    with pytest.raises(TaskError) as err:
        get_task("prompts", path=str(tmp_path / "p.jsonl")).train_examples()
    offset = len(first.encode()) + len(before.encode())  # bytes, not characters: "é" is two
    assert f"p.jsonl: line 2 (byte {offset}) is not JSON" in _one_line(err)


def test_parquet_message_columns_are_chats(tmp_path):
    rows = [{"messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": f"q{i}"}],
             "answer": str(i)} for i in range(5)]
    _parquet(tmp_path / "c.parquet", rows)
    task = get_task("prompts", path=str(tmp_path / "c.parquet"), prompt_column="messages", eval_fraction=0.2)
    ex = next(e for e in task.train_examples() + task.eval_examples() if e.prompt == "q3")
    assert ex.reference == {"answer": "3"} and task.format_prompt(ex) == "be brief\n\nq3"


@pytest.mark.parametrize("value, says", [
    (["a", "b"], "field 'prompt' is a list of strings"),
    ([{"role": "user", "text": "hi"}], "field 'prompt' message 0 has no 'content' (it has 'text'"),
    ([{"role": "wizard", "content": "hi"}], "field 'prompt' message 0 has role 'wizard'; roles are system"),
    ([{"role": "user", "content": [{"type": "text", "text": "hi"}]}], "field 'prompt' message 0: content is list, not text"),
    ({"role": "user", "content": "hi"}, "field 'prompt' is dict"),
])
@pytest.mark.parametrize("kind", ["jsonl", "parquet"])
def test_list_and_message_values_that_are_no_chat_are_refused_naming_the_row(tmp_path, value, says, kind):
    # JSON Lines may mix text and lists in a column; a Parquet column holds one type: every row is the value
    rows, bad = ([{"prompt": "fine"}] * 2 + [{"prompt": value}, {"prompt": "fine"}], 2) if kind == "jsonl" else \
        ([{"prompt": value}] * 4, 0)
    path = tmp_path / f"p.{kind}"
    (_jsonl if kind == "jsonl" else _parquet)(path, rows)
    with pytest.raises(TaskError) as err:
        get_task("prompts", path=str(path)).train_examples()
    assert f"{path} row {bad}: {says}" in _one_line(err)


def test_a_bom_an_empty_file_and_json_columns_are_read(tmp_path):
    (tmp_path / "a.jsonl").write_bytes(b"\xef\xbb\xbf" + '{"prompt": "bom"}\n'.encode())
    (tmp_path / "b.csv").write_text("")
    (tmp_path / "c.json").write_text(json.dumps({"prompt": ["c0", "c1"], "answer": [0, 1]}))
    _jsonl(tmp_path / "d.jsonl", [{"prompt": f"d{i}"} for i in range(3)])
    assert _prompts(get_task("prompts", path=str(tmp_path))) == ["bom", "c0", "c1", "d0", "d1", "d2"]
    (tmp_path / "a.jsonl").write_bytes(b"\xef\xbb\xbf" + b'{"prompt": "x"}\n{oops}\n')
    with pytest.raises(TaskError, match=r"a.jsonl: line 2 \(byte 20\) is not JSON"):  # 3 + 16 + 1
        get_task("prompts", path=str(tmp_path)).train_examples()
