"""`prompts`: your own prompts, scored by the reward you name (TRL's "a dataset with a prompt column").

The data is a JSON Lines, JSON, CSV or Parquet file, a local folder of such files (each read by its
own format; prompt_files.py), or a Hugging Face Hub dataset id. Each row needs a prompt column: text,
or a chat `messages` list ([{"role": ..., "content": ...}], put through the model's chat template as
it is); anything else is refused in one line naming the row (prompt_files.prompt_of). Every other
column of the row is sent to the reward as the row's `reference` (so a reward function gets it as
a keyword list, as TRL passes dataset columns). As in TRL, a text prompt reaches the model as it
is and a conversation through the chat template (`run.chat_template` chooses otherwise).

The reward is not the task's: name it with `reward.function=FILE.py:NAME` (a Python function),
`reward.url=http://HOST:PORT` (a running service), `reward.service=NAME` or `reward.services`.
Success is the reward's `success` metric when it reports one; a reward function without one has no
success rule (n/a) unless reward.success_threshold sets one; a service's defaults to score > 0.

Options:
  path            file, folder or hub id (required)
  split           split to read from a folder or hub id (default "train")
  prompt_column   default "prompt"
  id_column       optional column of unique row ids (default ids: "prompts/<split>/<row number>")
  eval_path / eval_split / eval_fraction   held-out prompts, as in `aime` (default: 20% of path)
  max_new_tokens  generation length default for this data (default 256; rollout.max_new_tokens wins)
  think_tags      [open, close] of a reasoning model's thinking block (every task; see base.Task)
"""

from __future__ import annotations

import json
from functools import cached_property
from typing import Any

from botgrpo_tasks.base import Example, Task
from botgrpo_tasks.errors import TaskError
from botgrpo_tasks.held_out import eval_fraction, split_by_hash
from botgrpo_tasks.prompt_files import load_table, prompt_of

OPTIONS = ("path", "split", "prompt_column", "id_column", "eval_path", "eval_split", "eval_fraction",
           "max_new_tokens", "think_tags")


def _json_safe(value: Any) -> Any:
    """A column value as JSON (what a reference may hold); anything else as its text."""
    try:
        json.dumps(value, allow_nan=False)
        return value
    except (TypeError, ValueError):
        return str(value)


class PromptsTask(Task):
    """Rows of a user's table; see the module docstring."""

    name = "prompts"
    service = None  # the reward the user names (reward.function, reward.url, reward.service, reward.services)
    service_options: dict[str, Any] = {}
    success_metric = "success"
    step_separator = "\n\n"
    stop = ()
    eval_metrics = ("success",)
    templates_plain_prompts = False  # as TRL: a text prompt is fed as it is, a conversation is templated

    def __init__(self, seed: int = 0, **options: Any):
        unknown = sorted(set(options) - set(OPTIONS))
        if unknown:
            raise TaskError(f"task 'prompts' has no option(s) {', '.join(unknown)}; known: {', '.join(OPTIONS)}")
        super().__init__(seed=seed, **options)
        self.path = self._text("path", None)
        self.split = self._text("split", "train")
        self.prompt_column = self._text("prompt_column", "prompt")
        self.id_column = self._text("id_column", None) if options.get("id_column") is not None else None
        self.eval_path = self._text("eval_path", None) if options.get("eval_path") is not None else None
        self.eval_split = self._text("eval_split", self.split)
        self.eval_fraction = eval_fraction("prompts", options, self.eval_path is not None)
        length = options.get("max_new_tokens", 256)
        if isinstance(length, bool) or not isinstance(length, int) or length < 1:
            raise TaskError(f"task 'prompts': max_new_tokens must be a positive integer, got {length!r}")
        self.max_new_tokens = length
        self._chats: dict[str, list[dict]] = {}  # example id -> its messages, for prompts given as chats

    def _text(self, key: str, default: str | None) -> str:
        value = self.options.get(key, default)
        if value is None:
            raise TaskError(f"task 'prompts' needs {key}=...: a .jsonl/.json/.csv/.parquet file, a folder or a "
                            "Hugging Face dataset id with a prompt column")
        if not isinstance(value, str) or not value:
            raise TaskError(f"task 'prompts': {key} must be a non-empty string, got {value!r}")
        return value

    def _examples(self, source: str, split: str, tag: str) -> list[Example]:
        table = load_table(source, split)
        missing = [c for c in (self.prompt_column, self.id_column) if c and c not in table.column_names]
        if missing:
            raise TaskError(f"{source} lacks column(s) {', '.join(map(repr, missing))} (its columns: "
                            f"{', '.join(table.column_names)}); name the prompt column with prompt_column=")
        examples = []
        for i, row in enumerate(table):
            where = table.where(i)
            text, chat = prompt_of(row[self.prompt_column], where, self.prompt_column)
            if not text.strip():
                raise TaskError(f"{where} has an empty {self.prompt_column!r}; fill it in or remove the row")
            rid = str(row[self.id_column]) if self.id_column else f"prompts/{tag}/{i}"
            reference = {k: _json_safe(v) for k, v in row.items() if k not in (self.prompt_column, self.id_column)}
            if chat:
                self._chats[rid] = chat
            examples.append(Example(id=rid, prompt=text, reference=reference))
        ids = [e.id for e in examples]
        if len(set(ids)) != len(ids):
            raise TaskError(f"{source}: id_column {self.id_column!r} has repeated values; ids must be unique")
        return examples

    @cached_property
    def _splits(self) -> tuple[list[Example], list[Example]]:
        rows = self._examples(self.path, self.split, "train")
        if self.eval_path is not None:
            return rows, self._examples(self.eval_path, self.eval_split, "eval")
        train, held = split_by_hash([r.prompt for r in rows], self.eval_fraction, self.path, "prompt")
        return [rows[i] for i in train], [rows[i] for i in held]

    def train_examples(self) -> list[Example]:
        return self._splits[0]

    def eval_examples(self) -> list[Example]:
        return self._splits[1]

    def corpus(self, n: int, seed: int = 0) -> list[tuple[str, str]]:
        raise TaskError("task 'prompts' has no tiny model of its own to bootstrap: set model.name_or_path (a Hub id "
                        "such as HuggingFaceTB/SmolLM2-135M-Instruct, a model folder or a .gguf file)")

    def messages(self, example: Example) -> list[dict] | None:
        chat = self._chats.get(example.id)
        return [dict(m) for m in chat] if chat is not None else None


def make_task(seed: int = 0, **options: Any) -> PromptsTask:
    return PromptsTask(seed=seed, **options)
