"""TRL's environment_factory on the tiny arith_synth model whose warm start calls a `calculator` tool
(task option calculator=true): a TRL script with an environment class runs with one changed import;
each rollout's calls reach its own instance; reset's string completes the prompt the model sees;
get_reward adds to reward_funcs' weighted sum with weight 1; a dict of factories follows the rows'
`environment` column; a raising tool answers the model as TRL does; a raising reset is one line;
and TRL's tools=[fn] from a script without a main guard answers the model from forked tool workers."""

from __future__ import annotations

import json
import re
import runpy
import textwrap
from pathlib import Path

import pytest
import torch
from datasets import Dataset
from trl import GRPOConfig

from botgrpo_cli import Trainer
from botgrpo_cli.errors import UserError
from botgrpo_cli.turns.tool_calls import parse_tool_calls

INSTRUCTION = "\nSolve step by step, one equation per paragraph.\n"  # the end of the warm start's prompts


@pytest.fixture(scope="module")
def model_dir(botgrpo_cache) -> Path:
    from botgrpo_cli.bootstrap import bootstrap
    from botgrpo_tasks import get_task

    return bootstrap(get_task("arith_synth", calculator=True))


@pytest.fixture(scope="module")
def problems() -> list[str]:
    """Chat rows holding each problem without the instruction, which the environment's reset adds."""
    from botgrpo_tasks import get_task

    return [ex.prompt[:-len(INSTRUCTION)] for ex in get_task("arith_synth").train_examples()[:8]]


def exchanges(batch, i: int) -> list[tuple[list, list[str]]]:
    """Row i's tool rounds, by the batch's token columns: each model turn that another follows (its
    calls ran), with its calls and the tool answers the environment put after it."""
    text, offsets = batch.texts[i], batch.offsets[i]
    spans = [(offsets[a][0], offsets[b - 1][1]) for a, b in batch.turns[i]]
    return [(parse_tool_calls(text[start:end]), ANSWER.findall(text[end:following]))
            for (start, end), (following, _) in zip(spans, spans[1:])]


def well_formed(call) -> bool:
    """A well-formed call naming the calculator with its one argument (one that reaches the tool)."""
    return call.error is None and call.name == "calculator" and set(call.arguments) == {"expression"}


ANSWER = re.compile(r"<tool_response>\n(.*?)\n</tool_response>", re.DOTALL)


SCRIPT = '''
from datasets import Dataset
from trl import GRPOConfig
from botgrpo_cli import Trainer as GRPOTrainer  # the one changed line: was `from trl import GRPOConfig, GRPOTrainer`

SCORED = []  # what the reward function saw: (instance serial, its calls, prompt, completion) per rollout


class Calculator:
    made = 0

    def __init__(self):
        Calculator.made += 1
        self.serial, self.calls = Calculator.made, []

    def reset(self, **kwargs) -> str | None:
        self.calls = []
        return INSTRUCTION

    def calculator(self, expression: str) -> str:
        """Multiply two whole numbers written as "a * b".

        Args:
            expression: the product to compute
        """
        self.calls.append(expression)
        a, b = expression.split("*")
        return str(int(a) * int(b))

    def get_reward(self) -> float:
        return 1.0 if self.calls else 0.0


def calls_made(prompts, completions, environments, **kwargs):
    SCORED.extend((env.serial, list(env.calls), p, c) for env, p, c in zip(environments, prompts, completions))
    return [0.5 * len(env.calls) for env in environments]


if __name__ == "__main__":
    dataset = Dataset.from_list([{"prompt": [{"role": "user", "content": p}]} for p in PROBLEMS])
    args = GRPOConfig(output_dir=OUT, use_cpu=True, report_to="none", num_generations=4, per_device_train_batch_size=8,
                      max_steps=2, max_completion_length=48, max_tool_calling_iterations=1, reward_weights=[2.0],
                      learning_rate=1e-3, logging_steps=1, save_strategy="no")
    GRPOTrainer(model=MODEL, reward_funcs=calls_made, train_dataset=dataset, args=args,
                environment_factory=Calculator).train()
'''


def test_a_trl_script_with_an_environment_runs_with_one_changed_import(model_dir, problems, tmp_path, seen, scoring):
    script = tmp_path / "train_env.py"
    script.write_text(textwrap.dedent(SCRIPT).replace("OUT", repr(str(tmp_path / "run")))
                      .replace("MODEL", repr(str(model_dir))).replace("PROBLEMS", repr(problems))
                      .replace("INSTRUCTION\n", repr(INSTRUCTION) + "\n"))
    ran = runpy.run_path(str(script), run_name="__main__")  # as `python train_env.py` runs it
    metrics = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [m["step"] for m in metrics] == [1, 2] and all(m["reward/masked"] == 0 for m in metrics)
    assert all("reward/Calculator/mean" in m and "reward/calls_made/mean" in m for m in metrics)
    assert sum(m["turns/tool_calls"] for m in metrics) > 0
    scored = ran["SCORED"]
    assert len(scored) == 16 and len({serial for serial, *_ in scored}) == 16  # a new instance for every rollout
    assert ran["Calculator"].made == 1 + 16  # TRL's probe, then one per rollout: none reused across steps
    called = 0
    for step, batch in enumerate(seen["batches"]):
        assert max(len(turns) for turns in batch.turns) == 2  # max_tool_calling_iterations=1: one round of calls
        trained = torch.zeros_like(batch.mask)
        for i, turns in enumerate(batch.turns):
            for a, b in turns:
                trained[i, a:b] = True  # the model's own tokens, by hand from its turns
        mask, adv = seen["advantages"][step]
        assert torch.equal(batch.trained, trained) and torch.equal(mask, trained)  # the tools' answers: not trained
        assert bool((batch.mask & ~trained).any()) and bool((adv[~mask] == 0).all())
        for i, prompt_seen in enumerate(batch.prompts):
            serial, calls, prompt, completion = scored[8 * step + i]
            assert completion[-1]["content"] == batch.texts[i]  # the reward's row i is the batch's row i
            content = prompt[-1]["content"]  # TRL's reward functions get the prompt with reset's string appended
            assert content.endswith(INSTRUCTION) and content[:-len(INSTRUCTION)] in problems
            assert prompt_seen == content + "\n\n"  # and so did the model (no chat template: plain paragraphs)
            ran = [c.arguments["expression"] for made, _ in exchanges(batch, i) for c in made if well_formed(c)]
            assert calls == ran  # this rollout's instance saw this rollout's calls, and no other's
            called += bool(calls)
        raw, ok, _ = scoring["scores"][step]
        want = [2.0 * 0.5 * len(calls) + 1.0 * bool(calls) for _, calls, *_ in scored[8 * step:8 * step + 8]]
        assert bool(ok.all()) and raw.tolist() == pytest.approx(want)  # reward_weights [2] then get_reward at weight 1
        assert torch.equal(scoring["advantage_scores"][step], raw)  # the scores the advantages start from
    assert called > 0


class Calculator:
    def reset(self, **kwargs) -> str:
        return INSTRUCTION

    def calculator(self, expression: str) -> str:
        """Multiply two whole numbers written as "a * b".

        Args:
            expression: the product to compute
        """
        a, b = expression.split("*")
        return str(int(a) * int(b))

    def get_reward(self) -> float:
        return 1.0


class Broken(Calculator):
    def calculator(self, expression: str) -> str:
        """Multiply two whole numbers written as "a * b".

        Args:
            expression: the product to compute
        """
        raise ValueError("the calculator is broken")

    def get_reward(self) -> float:
        return -1.0


def _args(tmp_path: Path, steps: int = 1) -> GRPOConfig:
    return GRPOConfig(output_dir=str(tmp_path / "run"), use_cpu=True, report_to="none", num_generations=4,
                      per_device_train_batch_size=8, max_steps=steps, max_completion_length=48,
                      max_tool_calling_iterations=1, learning_rate=1e-3, logging_steps=1, save_strategy="no")


def test_a_dict_of_factories_follows_the_rows_environment_column(model_dir, problems, tmp_path, seen, scoring):
    rows = [{"prompt": [{"role": "user", "content": p}], "environment": "works" if k % 2 else "broken"}
            for k, p in enumerate(problems)]
    trainer = Trainer(model=str(model_dir), train_dataset=Dataset.from_list(rows), args=_args(tmp_path),
                      environment_factory={"works": Calculator, "broken": Broken})  # reward_funcs omitted: get_reward
    trainer.config.run.threads = 1
    (m,) = trainer.train().metrics
    assert m["reward/masked"] == 0 and m["turns/tool_errors"] > 0
    (batch,), ((raw, ok, _),) = seen["batches"], scoring["scores"]
    by_problem = {p: row["environment"] for p, row in zip(problems, rows)}
    answered = 0
    for i, env in enumerate(batch.environments):
        kind = by_problem[batch.prompts[i][:-len(INSTRUCTION + "\n\n")]]
        assert type(env.instance) is {"works": Calculator, "broken": Broken}[kind]
        assert float(raw[i]) == {"works": 1.0, "broken": -1.0}[kind]  # each class's get_reward scores its own rows only
        for calls, answers in exchanges(batch, i):
            assert len(calls) == len(answers)  # one answer per call, in order
            for call, answer in zip(calls, answers):
                if not well_formed(call):
                    continue
                if kind == "broken":
                    assert answer == "{'error': 'the calculator is broken'}"  # TRL's answer to a raising tool
                    answered += 1
                elif re.fullmatch(r"\s*\d+\s*\*\s*\d+\s*", call.arguments["expression"]):
                    a, b = call.arguments["expression"].split("*")
                    assert answer == str(int(a) * int(b))
    assert answered > 0 and bool(ok.all())


class FailingReset(Calculator):
    def reset(self, **kwargs) -> str:
        raise KeyError("level")


def test_a_reset_that_raises_ends_the_run_with_one_line(model_dir, problems, tmp_path):
    rows = [{"prompt": [{"role": "user", "content": p}]} for p in problems]
    trainer = Trainer(model=str(model_dir), train_dataset=Dataset.from_list(rows), args=_args(tmp_path),
                      environment_factory=FailingReset)
    trainer.config.run.threads = 1
    with pytest.raises(UserError, match=r"environment_factory: FailingReset.reset raised KeyError: 'level' "
                                        r"\(.*line \d+\) \(row prompts/train/\d+\)$") as caught:
        trainer.train()
    assert "\n" not in str(caught.value)


class Notes:
    def reset(self, **kwargs) -> str:
        self.notes = []
        return INSTRUCTION

    def note(self, text: str) -> str:
        """Keep a note.

        Args:
            text: what to keep
        """
        self.notes.append(text)
        return "kept"


def no_reward(completions, **kwargs):
    return [0.0] * len(completions)


def test_tools_beside_an_environment_answer_the_calls_it_has_no_method_for(model_dir, problems, tmp_path, seen):
    """TRL's tools=[...] with environment_factory: a call to the built-in calculator goes to the tool
    workers, though the trajectory's environment (with a tool of its own) answers the others."""
    rows = [{"prompt": [{"role": "user", "content": p}]} for p in problems]
    trainer = Trainer(model=str(model_dir), reward_funcs=no_reward, train_dataset=Dataset.from_list(rows),
                      args=_args(tmp_path), tools=["calculator"], environment_factory=Notes)
    trainer.config.run.threads = 1
    (m,) = trainer.train().metrics
    (batch,) = seen["batches"]
    answered = 0
    for i, env in enumerate(batch.environments):
        assert env.instance.notes == []  # the model calls only the calculator
        for calls, answers in exchanges(batch, i):
            for call, answer in zip(calls, answers):
                if well_formed(call) and re.fullmatch(r"\s*\d+\s*\*\s*\d+\s*", call.arguments["expression"]):
                    a, b = call.arguments["expression"].split("*")
                    assert answer == str(int(a) * int(b))  # the built-in's answer, from a tool worker
                    answered += 1
    assert answered > 0 and m["turns/tool_calls"] >= answered


UNGUARDED = '''
from datasets import Dataset
from trl import GRPOConfig
from botgrpo_cli import Trainer as GRPOTrainer  # the one changed line: was `from trl import GRPOConfig, GRPOTrainer`


def calculator(expression: str) -> str:
    """Multiply two whole numbers written as "a * b".

    Args:
        expression: the product to compute
    """
    a, b = expression.split("*")
    return f"product: {int(a) * int(b)}"


def no_reward(completions, **kwargs):
    return [0.0] * len(completions)


dataset = Dataset.from_list([{"prompt": [{"role": "user", "content": p + INSTRUCTION}]} for p in PROBLEMS])
args = GRPOConfig(output_dir=OUT, use_cpu=True, report_to="none", num_generations=4, per_device_train_batch_size=8,
                  max_steps=1, max_completion_length=48, max_tool_calling_iterations=1, learning_rate=1e-3,
                  logging_steps=1, save_strategy="no")
trainer = GRPOTrainer(model=MODEL, reward_funcs=no_reward, train_dataset=dataset, tools=[calculator], args=args)
trainer.train()
'''


def test_a_tool_defined_in_a_script_without_a_main_guard_answers_the_model(model_dir, problems, tmp_path, seen):
    """TRL's tool example as it is written: the tool defined in the script, training at its top level
    (no `if __name__ == "__main__":`). The tool workers are forks that inherit the function: no
    worker imports the script (which would start the training again), and the calls get its answers."""
    script = tmp_path / "train_tools.py"
    script.write_text(textwrap.dedent(UNGUARDED).replace("OUT", repr(str(tmp_path / "run")))
                      .replace("MODEL", repr(str(model_dir))).replace("PROBLEMS", repr(problems))
                      .replace("+ INSTRUCTION", "+ " + repr(INSTRUCTION)))
    runpy.run_path(str(script), run_name="__main__")  # as `python train_tools.py` runs it
    (m,) = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    (batch,) = seen["batches"]  # one training, in this process
    answered = 0
    for i in range(len(batch.texts)):
        for calls, answers in exchanges(batch, i):
            for call, answer in zip(calls, answers):
                if well_formed(call) and re.fullmatch(r"\s*\d+\s*\*\s*\d+\s*", call.arguments["expression"]):
                    a, b = call.arguments["expression"].split("*")
                    assert answer == f"product: {int(a) * int(b)}"  # the script's own function answered
                    answered += 1
    assert answered > 0 and m["turns/tool_calls"] >= answered
