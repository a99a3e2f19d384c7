"""The task interface: what a task gives the trainer, `botgrpo eval` and `botgrpo bootstrap`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Example:
    """One prompt with what the reward service needs to judge completions of it."""

    id: str  # stable across runs: "<task>/<split>/<index>" or a dataset's own id
    prompt: str  # the instruction text (before any chat template)
    reference: dict[str, Any] = field(default_factory=dict)  # sent as the request's `reference`


class Task:
    """Base class. Subclasses set the attributes and implement the example lists.

    A task is cheap to construct; data is produced or loaded lazily and deterministically from
    `seed`, so the same seed gives the same examples in the same order.
    """

    name: str = "base"
    service: str = "math"  # reward service that scores completions
    service_options: dict[str, Any] = {}  # sent as each request's `options`
    success_metric: str = "correct"  # the service metric that means "solved"
    step_separator: str | None = None  # for step-level methods (pure); None = no steps
    stop: tuple[str, ...] = ()  # generation stops at any of these strings (kept in the text)
    max_new_tokens: int = 256  # a sensible default for this task
    eval_metrics: tuple[str, ...] = ("correct",)  # service metrics `botgrpo eval` aggregates
    bootstrap_sft: dict[str, dict[str, Any]] = {}  # size -> SftConfig fields `botgrpo bootstrap` changes
    corpus_version: int = 1  # bump when corpus() changes, so cached warm starts are rebuilt

    def __init__(self, seed: int = 0, **options: Any):
        self.seed = seed
        self.options = options

    def train_examples(self) -> list[Example]:
        raise NotImplementedError

    def eval_examples(self) -> list[Example]:
        raise NotImplementedError

    def corpus(self, n: int, seed: int = 0) -> list[tuple[str, str]]:
        """(prompt, completion) pairs for the supervised warm start of `botgrpo bootstrap`."""
        raise NotImplementedError(f"task {self.name!r} has no synthetic corpus")

    def format_prompt(self, example: Example, tokenizer: Any = None) -> str:
        """The text the model sees: the tokenizer's chat template when it has one, else the raw prompt."""
        if tokenizer is not None and getattr(tokenizer, "chat_template", None):
            return tokenizer.apply_chat_template(
                [{"role": "user", "content": example.prompt}], tokenize=False, add_generation_prompt=True
            )
        return example.prompt


class SyntheticTask(Task):
    """A generated task: `_examples(split, n)` draws n examples of a split from the seed; sizes are
    the options n_train (default 2000) and n_eval (default 256)."""

    def _examples(self, split: str, n: int) -> list[Example]:
        raise NotImplementedError

    def train_examples(self) -> list[Example]:
        return self._examples("train", int(self.options.get("n_train", 2000)))

    def eval_examples(self) -> list[Example]:
        return self._examples("eval", int(self.options.get("n_eval", 256)))
