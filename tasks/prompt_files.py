"""Reading a task's table (`prompts`, `aime`): one file, every data file of a folder, or a Hub dataset id.

Each file is read by its own format (`.jsonl`, `.json`, `.csv`, `.parquet`/`.pq`), so a folder
holding several formats gives all their rows, files in sorted path order. A folder's other files
are skipped and named in one warning line. When some file names a split (a path part such as
`train`, `test`, `validation`, `dev`, `eval`, alone or before `-`, `_`, `.` or digits, as
`datasets` reads folders), the split's files are read and files naming no split are skipped;
otherwise every data file is split `train`. Text files must be UTF-8 (a BOM is allowed): any other
bytes are one error naming the file and the byte offset, as is a line that is not JSON. A Hub
dataset id is loaded with `datasets.load_dataset(id, split=...)` (the network or a warm cache).

A prompt value is text, or a chat: a list of `{"role", "content"}` messages with a role of ROLES
and text content. Anything else (a list of strings, a message with `text` instead of `content`, an
unknown role, content given as parts) is refused in one line naming the row and the field: such
data has more than one reading, and guessing one would train on a prompt the user did not write.
"""

from __future__ import annotations

import csv
import io
import json
import logging
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from botgrpo_tasks.errors import TaskError

log = logging.getLogger("botgrpo.tasks")
BOM = b"\xef\xbb\xbf"

# What a Hub id looks like ("name" or "owner/name"); anything else that does not exist is a missing file.
_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*(/[\w.-]+)?")
FORMATS = {".jsonl": "jsonl", ".json": "json", ".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}
ROLES = ("system", "user", "assistant", "tool")
SPLIT_WORDS = {"train": "train", "training": "train", "test": "test", "testing": "test", "eval": "test",
               "evaluation": "test", "validation": "validation", "valid": "validation", "val": "validation",
               "dev": "validation"}
_SPLIT = re.compile(r"(?:^|[/\\._ -])(" + "|".join(sorted(SPLIT_WORDS, key=len, reverse=True)) + r")(?=[/\\._ 0-9-]|$)",
                    re.IGNORECASE)


@dataclass
class Rows:
    """A table's rows (dicts) with where each came from; iterates like a `datasets.Dataset`."""

    rows: list[dict] = field(default_factory=list)
    origins: list[str] = field(default_factory=list)  # "FILE row N" per row, for messages
    column_names: list[str] = field(default_factory=list)  # the columns every file has

    def __iter__(self) -> Iterator[dict]:
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    def where(self, i: int) -> str:
        return self.origins[i]


def load_table(source: str, split: str) -> Rows:
    """The rows of a local file or folder, or of a Hub dataset (see the module docstring); TaskError,
    one line, when there are none or they cannot be read."""
    path = Path(source).expanduser()
    if path.exists():
        return _read_local(path, source, split)
    if not _HUB_ID.fullmatch(source) or path.suffix.lower() in FORMATS:
        raise TaskError(f"data file {source!r} not found (relative paths start at {Path.cwd()}); check path=")
    import datasets

    try:
        table = datasets.load_dataset(source, split=split)
    except Exception as err:  # not found, no network, unknown split, bad files: all the user's to fix
        raise TaskError(f"cannot load Hugging Face Hub dataset {source!r} (split {split!r}): "
                        f"{str(err).strip().splitlines()[0].rstrip('.')}; check the name and split, or download "
                        "it and pass a local file as path=") from err
    if len(table) == 0:
        raise TaskError(f"{source} has no rows; add rows to it or point path= at another file")
    return Rows(table.to_list(), [f"{source} row {i}" for i in range(len(table))], list(table.column_names))


def _read_local(path: Path, source: str, split: str) -> Rows:
    files = [path] if path.is_file() else _folder_files(path, source, split)
    table = Rows()
    columns: list[str] | None = None
    for f in files:
        shown = str(f) if f == path else str(f.relative_to(path))
        rows = _read_file(f, source if f == path else f"{source}/{shown}")
        if rows:  # an empty file adds no rows and takes no column away
            keys = list(dict.fromkeys(k for r in rows for k in r))
            columns = keys if columns is None else [c for c in columns if c in keys]
        table.rows += rows
        table.origins += [f"{shown if f != path else source} row {i}" for i in range(len(rows))]
    table.column_names = columns or []
    if not table.rows:
        raise TaskError(f"{source} has no rows; add rows to it or point path= at another file")
    return table


def _split_of(relative: Path) -> str | None:
    m = _SPLIT.search("/" + relative.as_posix())
    return SPLIT_WORDS[m.group(1).lower()] if m else None


def _folder_files(folder: Path, source: str, split: str) -> list[Path]:
    found = sorted(p for p in folder.rglob("*") if p.is_file()
                   and not any(part.startswith(".") for part in p.relative_to(folder).parts))
    data = [p for p in found if p.suffix.lower() in FORMATS]
    skipped = [(p, "not a data file") for p in found if p.suffix.lower() not in FORMATS]
    splits = {p: _split_of(p.relative_to(folder)) for p in data}
    wanted = SPLIT_WORDS.get(split.lower(), split.lower())
    if any(splits.values()):
        chosen = [p for p in data if splits[p] == wanted]
        skipped += [(p, "its name gives no split") for p in data if splits[p] is None]
    elif wanted == "train":
        chosen = data
    else:
        raise TaskError(f"{source}: no file names a split, so all of it is split 'train', not {split!r}; name the "
                        "files by split (train.jsonl, test.jsonl) or leave split unset")
    if skipped:
        names = ", ".join(f"{p.relative_to(folder)} ({why})" for p, why in sorted(skipped))
        log.warning("%s: skipped %d file(s): %s; data files are %s", source, len(skipped), names,
                    "/".join(FORMATS))
    if not chosen:
        have = sorted({s for s in splits.values() if s}) or ["none"]
        raise TaskError(f"{source} has no {'/'.join(FORMATS)} file of split {split!r} (splits found: "
                        f"{', '.join(have)}); check path= and split=")
    return chosen


def _text(path: Path, shown: str) -> tuple[str, int]:
    """A text file's content and the bytes of the BOM dropped before it; TaskError with the byte
    offset of the first byte that is not UTF-8."""
    data = path.read_bytes()
    try:
        return data.decode("utf-8-sig"), len(BOM) if data.startswith(BOM) else 0
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        raise TaskError(f"{shown}: byte {err.start} (line {line}) is not UTF-8 (0x{data[err.start]:02x}); save the "
                        "file as UTF-8 (e.g. iconv -f latin1 -t utf-8)") from None


def _read_file(path: Path, shown: str) -> list[dict]:
    kind = FORMATS.get(path.suffix.lower())
    if kind is None:
        raise TaskError(f"{shown}: unsupported file type {path.suffix!r}; use one of {', '.join(FORMATS)}")
    rows = {"jsonl": _jsonl, "json": _json, "csv": _csv, "parquet": _parquet}[kind](path, shown)
    bad = next((i for i, r in enumerate(rows) if not isinstance(r, dict)), None)
    if bad is not None:
        raise TaskError(f"{shown}: row {bad} is {type(rows[bad]).__name__}, not an object of columns")
    return rows


def _jsonl(path: Path, shown: str) -> list[dict]:
    text, offset = _text(path, shown)  # offset: bytes before the first line (a BOM)
    rows = []
    for n, line in enumerate(text.splitlines(keepends=True), 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as err:
                at = offset + len(line[:err.pos].encode())
                raise TaskError(f"{shown}: line {n} (byte {at}) is not JSON ({err.msg}); fix or remove it") from None
        offset += len(line.encode())
    return rows


def _json(path: Path, shown: str) -> list[dict]:
    text, _ = _text(path, shown)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise TaskError(f"{shown}: not JSON at byte {len(text[:err.pos].encode())} (line {err.lineno}: "
                        f"{err.msg}); fix the file") from None
    if isinstance(data, dict) and data and all(isinstance(v, list) for v in data.values()):
        lengths = {len(v) for v in data.values()}
        if len(lengths) == 1:  # columns: {"prompt": [...], "answer": [...]}
            return [dict(zip(data, values)) for values in zip(*data.values())]
    if not isinstance(data, list):
        raise TaskError(f"{shown}: a .json prompt file holds a list of rows ([{{\"prompt\": ...}}, ...]) or "
                        "columns of equal length; this one holds neither")
    return data


def _csv(path: Path, shown: str) -> list[dict]:
    import pandas as pd

    text, _ = _text(path, shown)
    if not text.strip():
        return []
    try:
        frame = pd.read_csv(io.StringIO(text))
    except (ValueError, csv.Error) as err:  # pandas' parser errors are ValueErrors
        raise TaskError(f"{shown}: cannot read it as CSV ({str(err).strip().splitlines()[0]})") from None
    return frame.astype(object).where(frame.notna(), None).to_dict("records")


def _parquet(path: Path, shown: str) -> list[dict]:
    import pyarrow.parquet as pq

    try:
        return pq.read_table(path).to_pylist()
    except Exception as err:  # pyarrow raises several types for one cause: not a readable Parquet file
        raise TaskError(f"{shown}: cannot read it as Parquet ({str(err).strip().splitlines()[0]})") from None


def prompt_of(value: Any, where: str, field_name: str) -> tuple[str, list[dict] | None]:
    """(prompt text, chat messages or None) of one row's prompt value; TaskError naming the row and
    the field when it is neither text nor a chat (see the module docstring)."""
    if value is None:
        return "", None
    if isinstance(value, str):
        return value, None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value), None
    what = f"{where}: field {field_name!r}"
    if isinstance(value, (list, tuple)) and value and all(isinstance(m, dict) for m in value):
        chat = [_message(m, f"{what} message {j}") for j, m in enumerate(value)]
        return chat[-1]["content"], chat
    if isinstance(value, (list, tuple)) and value and all(isinstance(m, str) for m in value):
        raise TaskError(f"{what} is a list of strings, not a prompt: write one text, or chat messages "
                        "[{\"role\": \"user\", \"content\": ...}]")
    raise TaskError(f"{what} is {type(value).__name__} {str(value)[:80]!r}; a prompt is text or a list of chat "
                    "messages [{\"role\": ..., \"content\": ...}]")


def _message(m: dict, what: str) -> dict:
    role, content = m.get("role"), m.get("content")
    if "content" not in m:
        hint = " (it has 'text': rename that key to 'content')" if "text" in m else ""
        raise TaskError(f"{what} has no 'content'{hint}; chat messages are {{\"role\", \"content\"}}")
    if role not in ROLES:
        raise TaskError(f"{what} has role {role!r}; roles are {', '.join(ROLES)}")
    if not isinstance(content, str):
        raise TaskError(f"{what}: content is {type(content).__name__}, not text; give each message's content as "
                        "one string")
    return {"role": role, "content": content}
