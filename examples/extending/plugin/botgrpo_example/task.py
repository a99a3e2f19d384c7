"""Task `keyword`: write a sentence that uses a given word. Scored by the `keyword` service."""

from __future__ import annotations

from typing import Any

from botgrpo_tasks import Example, Task

WORDS = ("apple", "river", "seven", "green", "music", "stone", "light", "paper")


class KeywordTask(Task):
    name = "keyword"
    service = "keyword"  # the reward service that scores it (this plugin's, below)
    success_metric = "found"  # a metric that service reports: 1 when the word is there
    eval_metrics = ("found",)
    max_new_tokens = 32

    def _examples(self, split: str, n: int) -> list[Example]:
        offset = 0 if split == "train" else 3  # the eval split starts elsewhere in the word list
        return [Example(id=f"keyword/{split}/{i}", prompt=f"Write one sentence that uses the word "
                        f"'{WORDS[(i + offset) % len(WORDS)]}'.", reference={"word": WORDS[(i + offset) % len(WORDS)]})
                for i in range(n)]

    def train_examples(self) -> list[Example]:
        return self._examples("train", int(self.options.get("n_train", 16)))

    def eval_examples(self) -> list[Example]:
        return self._examples("eval", int(self.options.get("n_eval", 4)))


def make_task(seed: int = 0, **options: Any) -> KeywordTask:
    return KeywordTask(seed=seed, **options)
