"""Trainer(environment_factory=...) as TRL 1.16's GRPOTrainer takes it, without a model: the factory
probed once, an Episode per trajectory with its own instance, reset's string appended to the last
user message, TRL's answers to raising and unknown tools, get_reward as one more reward function of
weight 1, a dict chosen by the rows' `environment` column, `environments` reaching only the reward
functions that name it, and one line for each bad input (trl_environments.py)."""

from __future__ import annotations

import pytest
from trl import GRPOConfig

from botgrpo_cli import Trainer
from botgrpo_cli.errors import UserError
from botgrpo_cli.reward_client.functions import FunctionPool, LocalFunction
from botgrpo_cli.rollout import FastEngine, SamplingParams
from botgrpo_cli.rollout.turns import MultiTurn, TurnSettings
from botgrpo_cli.trl_environments import EnvironmentBroken, Episode, TRLEnvironments, user_environment
from botgrpo_cli.turns.tool_calls import ToolCall
from botgrpo_rewards.protocol import ScoreRequest
from rollout_models import model, tokenizer

ROWS = [{"prompt": [{"role": "user", "content": f"Count to {n}."}], "target": n} for n in (2, 3)]


class Counter:
    """TRL's docs' shape: reset(**kwargs), typed tool methods with Args:, get_reward()."""

    made = 0

    def __init__(self):
        Counter.made += 1
        self.count, self.target, self.seen = 0, None, {}

    def reset(self, **kwargs) -> str | None:
        self.count, self.target, self.seen = 0, kwargs["target"], kwargs
        return " Use the tool."

    def increment(self, step: int) -> int:
        """Add to the counter.

        Args:
            step: how much to add
        """
        if step < 0:
            raise ValueError("steps are positive")
        self.count += step
        return self.count

    def get_reward(self) -> float:
        return float(self.count == self.target)


class Quiet:
    """No tools and no reward of its own: the prompt is left as it is."""

    def reset(self, **kwargs) -> None:
        return None


def reward(completions, **kwargs):
    return [0.0 for _ in completions]


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("BOTGRPO_CACHE", str(tmp_path))  # where Trainer writes the dataset


def trainer(factory, **kwargs):
    return Trainer(reward_funcs=kwargs.pop("reward_funcs", reward), train_dataset=ROWS, environment_factory=factory,
                   **kwargs)


def test_each_trajectory_gets_its_own_instance_and_resets_prompt_is_extended():
    envs = TRLEnvironments(Counter)
    made = Counter.made
    first, second = Episode(envs, None), Episode(envs, None)
    messages = first.reset({"id": "r0", "prompt": "Count to 2.", "target": 2})
    second.reset({"id": "r1", "prompt": "Count to 3.", "target": 3})
    assert messages == [{"role": "user", "content": "Count to 2. Use the tool."}]  # appended as TRL does: no separator
    assert first.instance.seen == {"prompt": "Count to 2.", "target": 2}  # the row's columns, not botgrpo's id
    assert Counter.made == made + 2 and first.instance is not second.instance
    assert first.run_tools([ToolCall("increment", {"step": 2})])[0].content == "2"
    assert second.run_tools([ToolCall("increment", {"step": 1})])[0].content == "1"
    assert (first.instance.count, second.instance.count) == (2, 1)  # each call reached its own trajectory's instance
    assert user_environment(first) is first.instance and first.tool_names == ("increment",)
    assert first.tool_schemas[0]["function"]["parameters"]["properties"] == {
        "step": {"type": "integer", "description": "how much to add"}}


def test_tools_that_raise_or_do_not_exist_answer_as_trl_does():
    episode = Episode(TRLEnvironments(Counter), None)
    episode.reset({"prompt": "p", "target": 1})
    raised, missing, bad = episode.run_tools([ToolCall("increment", {"step": -1}), ToolCall("decrement", {}),
                                              ToolCall("increment", {"stride": 1})])
    assert (raised.content, raised.error) == ("{'error': 'steps are positive'}", "error")
    assert missing.content == "{'error': 'Tool decrement not found.'}"
    assert bad.content.startswith("{'error': ") and "stride" in bad.content
    assert episode.instance.count == 0


def test_a_dict_chooses_by_the_environment_column_which_reset_does_not_get():
    envs = TRLEnvironments({"count": Counter, "quiet": Quiet})
    counting, quiet = Episode(envs, None), Episode(envs, None)
    counting.reset({"prompt": "p", "target": 1, "environment": "count"})
    assert counting.instance.seen == {"prompt": "p", "target": 1}
    assert quiet.reset({"prompt": "q", "environment": "quiet"}) == [{"role": "user", "content": "q"}]
    assert type(quiet.instance) is Quiet and quiet.tool_schemas == [] and quiet.takes_calls  # Counter has tools
    assert quiet.run_tools([ToolCall("increment", {"step": 1})])[0].content == "{'error': 'Tool increment not found.'}"
    with pytest.raises(EnvironmentBroken, match=r"environment='game', which is not among .*\['count', 'quiet'\]"):
        Episode(envs, None).reset({"prompt": "p", "environment": "game"})
    single = Episode(TRLEnvironments(Counter), None)
    single.reset({"prompt": "p", "target": 1, "environment": "x"})
    assert single.instance.seen["environment"] == "x"  # one factory: the column is an ordinary one, as in TRL


def test_get_reward_is_one_more_reward_function_of_weight_one_named_after_the_class():
    args = GRPOConfig(output_dir="unused", use_cpu=True, report_to="none", reward_weights=[2.0])
    r = trainer(Counter, args=args).config.reward
    assert r.function[0] is reward and r.weights == [2.0, 1.0] and r.function[1].__name__ == "Counter"
    with pytest.raises(UserError, match=r"^reward_weights has 2 weights for 1 reward function\(s\) in reward_funcs"):
        trainer(Counter, args=GRPOConfig(output_dir="unused", use_cpu=True, report_to="none", reward_weights=[2.0, 1.0]))
    both = trainer({"a": Counter, "b": Counter, "q": Quiet}).config  # one reward per class
    assert [f.__name__ for f in both.reward.function[1:]] == ["Counter"] and both.run.environment.multi
    own = trainer(Counter, reward_funcs=None).config.reward
    assert [f.__name__ for f in own.function] == ["Counter"] and own.weights is None  # reward_funcs may be omitted
    envs = [Counter(), Quiet(), Counter()]
    envs[0].count = envs[0].target = 3
    assert own.function[0](environments=envs, completions=["a", "b", "c"]) == [1.0, None, 0.0]  # None: not its rollout


def test_environments_reach_only_the_reward_functions_that_name_them():
    seen = {}

    def reads(completions, environments, **kwargs):
        seen["environments"] = environments
        return [float(env.count) for env in environments]

    pool = FunctionPool([reads, TRLEnvironments(Counter).reward_functions()[0]], weights=[2.0, 1.0])
    try:
        assert all(isinstance(p, LocalFunction) for p in pool.processes)  # no worker: the instances are here
        envs = [Counter(), Counter()]
        envs[0].count, envs[0].target, envs[1].count, envs[1].target = 1, 1, 2, 5
        requests = [ScoreRequest(id=str(i), prompt="p", completion="c") for i in range(2)]
        responses = pool.score_batch(requests, {"environments": envs})
        assert seen["environments"] == envs
        assert [r.score for r in responses] == [2.0 * 1 + 1.0, 2.0 * 2 + 0.0]
        assert responses[0].metrics["Counter/score"] == 1.0
    finally:
        pool.close()


class NoReset:
    def increment(self, step: int) -> int:
        """Add.

        Args:
            step: how much
        """
        return step


class Undocumented:
    def reset(self, **kwargs):
        return None

    def move(self, where):
        return where


class Broken:
    def __init__(self):
        raise RuntimeError("no server")

    def reset(self, **kwargs):
        return None


@pytest.mark.parametrize("factory, message", [
    (Counter(), r"^environment_factory must be a class .*got Counter: pass the class itself, not an instance$"),
    (Broken, r"^environment_factory: making an environment raised RuntimeError: no server \(.*line \d+\)$"),
    (NoReset, r"^environment_factory: NoReset has no reset method; a TRL environment defines reset\(self, "),
    (Undocumented, r"^tool Undocumented.move: .*docstring"),
    ({"a": Counter, "b": 3}, r"^environment_factory\['b'\] must be a class"),
    ({}, r"^environment_factory is an empty dict"),
])
def test_a_bad_factory_is_one_line_saying_what_to_do(factory, message):
    with pytest.raises(UserError, match=message) as caught:
        trainer(factory)
    assert "\n" not in str(caught.value)


def test_a_reset_that_raises_or_returns_something_else_is_one_line():
    class Failing(Counter):
        def reset(self, **kwargs):
            raise KeyError("level")

    class Numeric(Counter):
        def reset(self, **kwargs):
            return 3

    with pytest.raises(EnvironmentBroken, match=r"^environment_factory: Failing.reset raised KeyError: 'level' "
                                                r"\(.*line \d+\) \(row r7\)$"):
        Episode(TRLEnvironments(Failing), None).reset({"id": "r7", "prompt": "p"})
    with pytest.raises(EnvironmentBroken, match="returned int; return a string .* or None"):
        Episode(TRLEnvironments(Numeric), None).reset({"prompt": "p"})


def test_no_reward_source_no_dataset_or_two_environments_are_refused():
    with pytest.raises(UserError, match="^no reward: pass reward_funcs, or an environment with a get_reward"):
        trainer(Quiet, reward_funcs=None)
    with pytest.raises(UserError, match="environment_factory needs a train_dataset"):
        Trainer(reward_funcs=reward, environment_factory=Counter)
    with pytest.raises(UserError, match="get_reward is a reward function, which combines with reward functions only"):
        trainer(Counter, reward_funcs="math")


LISTS_TOOLS = ("{% if tools %}tools: {% for t in tools %}{{ t.function.name }} {% endfor %}\n{% endif %}"
               "{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}"
               "{% if add_generation_prompt %}assistant:{% endif %}")


def test_each_rows_prompt_shows_its_own_environments_tools_on_the_engine():
    """A dict of factories through MultiTurn on a real (random, tiny) model: each trajectory's first
    prompt lists only its environment's tools, and the batch carries each row's own instance."""
    tok = tokenizer()
    tok.chat_template = LISTS_TOOLS
    envs = TRLEnvironments({"count": Counter, "quiet": Quiet})
    settings = TurnSettings(max_turns=2, environment=envs.for_task(None))
    turns = MultiTurn(FastEngine(model("qwen2", tok), tok), tok, settings)
    rows = [{"prompt": "count the apples:", "target": 3, "environment": "count"},
            {"prompt": "x =", "environment": "quiet"}]
    batch = turns.generate([r["prompt"] for r in rows], 2, SamplingParams(max_new_tokens=4, temperature=0.0), rows=rows)
    assert batch.prompts[:2] == ["tools: increment user: count the apples: Use the tool.\nassistant:"] * 2
    assert batch.prompts[2:] == ["user: x =\nassistant:"] * 2  # Quiet has no tools, and its reset returned None
    instances = [user_environment(env) for env in batch.environments]
    assert [type(i) for i in instances] == [Counter, Counter, Quiet, Quiet] and instances[0] is not instances[1]
    assert instances[0].seen == {"prompt": "count the apples:", "target": 3}
