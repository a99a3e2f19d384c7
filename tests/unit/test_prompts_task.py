"""Task `prompts`: rows of the user's file, text or chat prompts, every other column as the reference."""

from __future__ import annotations

import json

import pytest

from botgrpo_tasks import get_task
from botgrpo_tasks.errors import TaskError


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def test_rows_become_examples_with_the_other_columns_as_reference(tmp_path):
    rows = [{"prompt": f"say {i}", "answer": str(i), "tags": ["a", i]} for i in range(10)]
    task = get_task("prompts", path=_write(tmp_path / "p.jsonl", rows))
    train, held = task.train_examples(), task.eval_examples()
    assert len(train) == 8 and len(held) == 2  # eval_fraction 0.2
    assert {e.prompt for e in train + held} == {r["prompt"] for r in rows}
    ex = next(e for e in train if e.prompt == "say 3")
    assert ex.reference == {"answer": "3", "tags": ["a", 3]} and ex.id.startswith("prompts/train/")
    assert task.service is None and task.success_metric == "success"
    assert task.format_prompt(ex) == "say 3"  # no tokenizer: the raw prompt


def test_a_chat_messages_column_is_the_conversation(tmp_path):
    chats = [{"messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": f"q{i}"}],
              "answer": i} for i in range(5)]
    task = get_task("prompts", path=_write(tmp_path / "c.jsonl", chats), prompt_column="messages",
                    eval_path=_write(tmp_path / "e.jsonl", chats[:1]))
    ex = task.train_examples()[2]
    assert ex.prompt == "q2" and ex.reference == {"answer": 2}
    assert task.format_prompt(ex) == "be brief\n\nq2"
    assert len(task.eval_examples()) == 1


def test_mistakes_are_one_line_that_says_what_to_do(tmp_path):
    path = _write(tmp_path / "p.jsonl", [{"question": "x"}] * 5)
    with pytest.raises(TaskError, match="lacks column.*'prompt'.*prompt_column="):
        get_task("prompts", path=path).train_examples()
    with pytest.raises(TaskError, match="needs path="):
        get_task("prompts")
    with pytest.raises(TaskError, match="no option.*promt_column"):
        get_task("prompts", path=path, promt_column="question")


class ChatTok:
    """A tokenizer with a chat template that shows what it was given."""

    chat_template = "x"

    def apply_chat_template(self, messages, tokenize, add_generation_prompt, **kwargs):
        return "".join(f"<{m['role']}>{m['content']}" for m in messages) + "<assistant>"


def test_as_in_trl_text_prompts_are_raw_and_conversations_templated_unless_chat_template_says(tmp_path):
    rows = [{"prompt": "say 1"}, {"prompt": [{"role": "user", "content": "hi"}]}] * 3
    task = get_task("prompts", path=_write(tmp_path / "p.jsonl", rows), eval_fraction=0.4)
    text = next(e for e in task.train_examples() if e.prompt == "say 1")
    chat = next(e for e in task.train_examples() if e.prompt == "hi")
    tok = ChatTok()
    assert task.format_prompt(text, tok) == "say 1"  # auto: TRL's rule
    assert task.format_prompt(chat, tok) == "<user>hi<assistant>"
    assert task.format_prompt(text, tok, chat_template="always") == "<user>say 1<assistant>"
    assert task.format_prompt(chat, tok, "sys", chat_template="never") == "sys\n\nhi"
    assert task.format_prompt(text, tok, "sys", chat_template="auto") == "sys\n\nsay 1"
    with pytest.raises(TaskError, match="chat_template must be one of auto, always, never"):
        task.format_prompt(text, tok, chat_template="yes")


def test_built_in_tasks_template_their_text_prompts_by_default():
    task = get_task("arith_synth", n_train=4, n_eval=2)
    ex = task.train_examples()[0]
    assert task.format_prompt(ex, ChatTok()) == f"<user>{ex.prompt}<assistant>"
    assert task.format_prompt(ex, ChatTok(), chat_template="never") == ex.prompt


def test_run_chat_template_is_checked_with_its_choices():
    from botgrpo_cli.config import load_config
    from botgrpo_cli.errors import UserError

    assert load_config(sets=["run.chat_template=never"]).run.chat_template == "never"
    with pytest.raises(UserError, match="run.chat_template must be one of auto, always, never"):
        load_config(sets=["run.chat_template=raw"])
