"""The task interface: what a task gives the trainer, `botgrpo eval` and `botgrpo bootstrap`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from botgrpo_rewards.protocol import DEFAULT_TAGS, opens_reasoning
from botgrpo_tasks.errors import TaskError


CHAT_TEMPLATE = ("auto", "always", "never")  # run.chat_template: when prompts go through the chat template


@dataclass(frozen=True)
class Example:
    """One prompt with what the reward service needs to judge completions of it."""

    id: str  # stable across runs: "<task>/<split>/<index>" or a dataset's own id
    prompt: str  # the instruction text (before any chat template)
    reference: dict[str, Any] = field(default_factory=dict)  # sent as the request's `reference`


# Multi-turn warm starts (arith_synth calculator=true, react_synth revise=true) write whole
# transcripts as the multi-turn driver builds them for a tokenizer without a chat template: a model
# turn ends with the bootstrapped tokenizer's end token, and each message between turns is a
# paragraph of its own (botgrpo_cli/turns/render.py).
TURN_END = "<|endoftext|>"  # the bootstrapped tokenizer's EOS


def between_turns(message: str) -> str:
    """A message between two model turns, as plain text (a tool's answer comes wrapped, see arith_synth).
    The next model turn starts with the blank line (NEXT_TURN): the model writes it."""
    return f"\n\n{message}"


NEXT_TURN = "\n\n"


class Task:
    """Base class. Subclasses set the attributes and implement the example lists.

    A task is cheap to construct; data is produced or loaded lazily and deterministically from
    `seed`, so the same seed gives the same examples in the same order.

    Every task takes the option `think_tags`: the [open, close] tags of a reasoning model's
    thinking block (default <think> / </think>; null: none). Answers and code are read only after
    the block, and the thinking budget counts the tokens inside it.
    """

    name: str = "base"
    service: str = "math"  # reward service that scores completions
    service_options: dict[str, Any] = {}  # sent as each request's `options`
    render_service: str | None = None  # the service that renders a completion (evaluation's screenshots); None: none
    success_metric: str = "correct"  # the service metric that means "solved"
    step_separator: str | None = None  # for step-level methods (pure); None = no steps
    stop: tuple[str, ...] = ()  # generation stops at any of these strings (kept in the text)
    max_new_tokens: int = 256  # a sensible default for this task
    eval_metrics: tuple[str, ...] = ("correct",)  # service metrics `botgrpo eval` aggregates
    bootstrap_sft: dict[str, dict[str, Any]] = {}  # size -> SftConfig fields `botgrpo bootstrap` changes
    corpus_version: int = 1  # bump when corpus() changes, so cached warm starts are rebuilt
    # chat_template auto puts plain-text prompts through the chat template too: the built-in tasks write
    # instructions for a chat model; a user's own data follows TRL (only conversations are templated)
    templates_plain_prompts: bool = True
    # With rollout.max_turns > 1: after a failed attempt the service's diagnostic comes back as the
    # next user message and the model revises (botgrpo_cli/turns/feedback.py); the last attempt decides.
    revises: bool = False
    # The tools a bootstrapped variant's warm start learned to call (run.tools for it); its base rate is
    # measured with them.
    warm_start_tools: tuple[str, ...] = ()

    def __init__(self, seed: int = 0, think_tags: Any = DEFAULT_TAGS, **options: Any):
        self.seed = seed
        self.options = options
        self.think_tags = _tags(think_tags)

    def think_options(self, prompt_text: str) -> dict[str, Any]:
        """The reasoning options sent with each request for a completion of `prompt_text` (the
        formatted prompt): the tags, and whether the prompt itself opened the thinking block."""
        if self.think_tags is None:
            return {"think_tags": None}
        return {"think_tags": list(self.think_tags), "think_open": opens_reasoning(prompt_text, self.think_tags)}

    def train_examples(self) -> list[Example]:
        raise NotImplementedError

    def eval_examples(self) -> list[Example]:
        raise NotImplementedError

    def corpus(self, n: int, seed: int = 0) -> list[tuple[str, str]]:
        """(prompt, completion) pairs for the supervised warm start of `botgrpo bootstrap`."""
        raise NotImplementedError(f"task {self.name!r} has no synthetic corpus")

    def messages(self, example: Example) -> list[dict] | None:
        """The example's prompt as chat messages when the data gave it so (TRL's conversational
        format: reward functions then get messages), else None."""
        return None

    def format_prompt(self, example: Example, tokenizer: Any = None, system_prompt: str | None = None,
                      template_kwargs: dict[str, Any] | None = None, chat_template: str = "auto") -> str:
        """The text the model sees. Through the tokenizer's chat template (with the system message and
        extra template arguments, e.g. enable_thinking) when `chat_template` is always, or auto and
        either the prompt is a conversation or the task templates its plain prompts
        (`templates_plain_prompts`); else the raw text, messages joined by blank lines."""
        if chat_template not in CHAT_TEMPLATE:
            raise TaskError(f"chat_template must be one of {', '.join(CHAT_TEMPLATE)}, got {chat_template!r}")
        chat = self.messages(example)
        templated = chat_template == "always" or (
            chat_template == "auto" and (chat is not None or self.templates_plain_prompts))
        messages = ([{"role": "system", "content": system_prompt}] if system_prompt is not None else []) + \
            (chat or [{"role": "user", "content": example.prompt}])
        if templated and tokenizer is not None and getattr(tokenizer, "chat_template", None):
            return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True,
                                                 **(template_kwargs or {}))
        return "\n\n".join(m["content"] for m in messages)


def _tags(value: Any) -> tuple[str, str] | None:
    if value is None or value is False:
        return None
    if not isinstance(value, (list, tuple)) or len(value) != 2 or not all(isinstance(t, str) and t for t in value):
        raise TaskError(f"task option think_tags must be [open, close] (two non-empty strings) or null, got {value!r}")
    return (value[0], value[1])


class SyntheticTask(Task):
    """A generated task: `_examples(split, n)` draws n examples of a split from the seed; sizes are
    the options n_train (default 2000) and n_eval (default 256)."""

    def _examples(self, split: str, n: int) -> list[Example]:
        raise NotImplementedError

    def train_examples(self) -> list[Example]:
        return self._examples("train", int(self.options.get("n_train", 2000)))

    def eval_examples(self) -> list[Example]:
        return self._examples("eval", int(self.options.get("n_eval", 256)))
