"""`aime`: competition-style math problems with a final answer, from any table you point it at.

The data is a JSON Lines, JSON, CSV or Parquet file, a local folder of such files (each read by its
own format; split by file name), or a Hugging Face Hub dataset id (loaded with
`datasets.load_dataset(id, split=...)`, which needs the network or a warm cache): prompt_files.py. Each row needs a problem and an answer column. Completions are scored by the `math`
service: 1 when the answer in the last `\\boxed{}` equals the reference.

Options:
  path            file, folder or hub id (required)
  split           split to read from a folder or hub id (default "train"; a single file is one split)
  problem_column  default "problem";  answer_column  default "answer"
  id_column       optional column of unique row ids (default ids: "aime/<split>/<row number>")
  eval_path       a second source for eval (read with `eval_split`, default `split`); or else
  eval_fraction   share of `path` held out for eval (default 0.2). The held-out rows are the ones
                  whose problem text has the smallest SHA-256, so the split does not depend on the
                  seed or on row order. To evaluate on a whole file, pass it as `eval_path` too.
  prompt_template text with a "{problem}" placeholder (default: DEFAULT_TEMPLATE)
  steps           true: the math service also checks each step's arithmetic (default false)
  rel_tol         relative tolerance for decimal answers, for a dataset whose golds are rounded
                  (default 0: the math service compares decimals exactly; at most 0.1)
  think_tags      [open, close] of a reasoning model's thinking block (every task; see base.Task)
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

from botgrpo_tasks.base import Example, Task
from botgrpo_tasks.errors import TaskError
from botgrpo_tasks.held_out import eval_fraction, split_by_hash
from botgrpo_tasks.prompt_files import load_table

DEFAULT_TEMPLATE = (
    "Solve the following problem. Reason step by step, showing your work, then give the final "
    "answer in \\boxed{}.\n\nProblem: {problem}"
)
OPTIONS = ("path", "split", "problem_column", "answer_column", "id_column", "eval_path", "eval_split",
           "eval_fraction", "prompt_template", "steps", "rel_tol", "think_tags")


def _answer_text(value: Any) -> str:
    """Answers as the math service expects them: strings; 204.0 from a float column becomes "204"."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return "" if value is None else str(value).strip()


class AimeTask(Task):
    """Problems with final answers from a user-supplied table; see the module docstring for options."""

    name = "aime"
    service = "math"
    service_options: dict[str, Any] = {}
    success_metric = "correct"
    step_separator = "\n\n"  # the math service's step checks also split on blank lines
    stop = ()
    max_new_tokens = 2048
    eval_metrics = ("correct", "extracted")

    def __init__(self, seed: int = 0, **options: Any):
        unknown = sorted(set(options) - set(OPTIONS))
        if unknown:
            raise TaskError(f"task 'aime' has no option(s) {', '.join(unknown)}; known: {', '.join(OPTIONS)}")
        super().__init__(seed=seed, **options)
        self.path: str = self._text("path", None)
        self.split = self._text("split", "train")
        self.problem_column = self._text("problem_column", "problem")
        self.answer_column = self._text("answer_column", "answer")
        self.id_column = self._optional_text("id_column")
        self.eval_path = self._optional_text("eval_path")
        self.eval_split = self._text("eval_split", self.split)
        self.template = self._text("prompt_template", DEFAULT_TEMPLATE)
        if "{problem}" not in self.template:
            raise TaskError("task 'aime': prompt_template must contain the placeholder {problem}")
        self.eval_fraction = eval_fraction("aime", options, self.eval_path is not None)
        steps = options.get("steps", False)
        if not isinstance(steps, bool):
            raise TaskError(f"task 'aime': steps must be true or false, got {steps!r}")
        self.service_options = {"steps": True} if steps else {}
        rel_tol = options.get("rel_tol", 0)
        if isinstance(rel_tol, bool) or not isinstance(rel_tol, (int, float)) or not 0 <= rel_tol <= 0.1:
            raise TaskError(f"task 'aime': rel_tol must be a number from 0 to 0.1, got {rel_tol!r}")
        if rel_tol:
            self.service_options["rel_tol"] = float(rel_tol)

    def _text(self, key: str, default: str | None) -> str:
        value = self.options.get(key, default)
        if value is None:
            raise TaskError(f"task 'aime' needs {key}=...: a .jsonl/.json/.csv/.parquet file or a Hugging Face dataset id")
        if not isinstance(value, str) or not value:
            raise TaskError(f"task 'aime': {key} must be a non-empty string, got {value!r}")
        return value

    def _optional_text(self, key: str) -> str | None:
        return self._text(key, None) if self.options.get(key) is not None else None

    def _rows(self, source: str, split: str) -> list[tuple[str, str, str | None]]:
        """(problem, answer, id or None) per row, after checking columns and values."""
        table = load_table(source, split)
        columns = [self.problem_column, self.answer_column] + ([self.id_column] if self.id_column else [])
        wanted = list(dict.fromkeys(columns))
        missing = [c for c in wanted if c not in table.column_names]
        if missing:
            raise TaskError(
                f"{source} lacks column(s) {', '.join(map(repr, missing))} "
                f"(its columns: {', '.join(table.column_names)}); "
                "name the right ones with problem_column=, answer_column= or id_column="
            )
        rows = []
        for i, row in enumerate(table):
            problem, answer = str(row[self.problem_column] or "").strip(), _answer_text(row[self.answer_column])
            if not problem or not answer:
                what = "problem" if not problem else "answer"
                raise TaskError(f"{table.where(i)} has an empty {what}; fill it in or remove the row")
            rows.append((problem, answer, str(row[self.id_column]) if self.id_column else None))
        ids = [r[2] for r in rows if r[2] is not None]
        if len(set(ids)) != len(ids):
            raise TaskError(f"{source}: id_column {self.id_column!r} has repeated values; ids must be unique")
        return rows

    def _examples(self, rows: list[tuple[str, str, str | None]], split: str, keep: list[int]) -> list[Example]:
        return [
            Example(
                id=rows[i][2] or f"aime/{split}/{i}",
                prompt=self.template.replace("{problem}", rows[i][0]),
                reference={"answer": rows[i][1]},
            )
            for i in keep
        ]

    @cached_property
    def _splits(self) -> tuple[list[Example], list[Example]]:
        rows = self._rows(self.path, self.split)
        if self.eval_path is not None:
            eval_rows = self._rows(str(self.eval_path), self.eval_split)
            train = self._examples(rows, "train", list(range(len(rows))))
            return train, self._examples(eval_rows, "eval", list(range(len(eval_rows))))
        train, held = split_by_hash([r[0] for r in rows], self.eval_fraction, self.path, "problem")
        return self._examples(rows, "train", train), self._examples(rows, "eval", held)

    def train_examples(self) -> list[Example]:
        return self._splits[0]

    def eval_examples(self) -> list[Example]:
        return self._splits[1]


def make_task(seed: int = 0, **options: Any) -> AimeTask:
    return AimeTask(seed=seed, **options)
