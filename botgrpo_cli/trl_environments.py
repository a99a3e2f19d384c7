"""TRL's `GRPOTrainer(environment_factory=...)` on botgrpo's multi-turn engine (rollout/turns.py).

A TRL environment is a class (or any callable returning an instance) with `reset(**row)`, public
methods the model calls as tools, and optionally `get_reward()`. `TRLEnvironments` makes the factory
(or a dict of factories, one chosen per row by its `environment` column) a botgrpo environment:
the engine makes one `Episode` per trajectory; its reset calls the factory for a new instance and
that instance's reset with the dataset row's columns, and appends a returned string to the last
user message; the instance's public methods are that trajectory's own tools (schemas from their
signatures and docstrings, as for tools=), called on that instance only, in the trainer process;
the episode ends when the model answers without a call (or at rollout.max_turns). A `get_reward`
is one more reward function, weight 1, named after the class, as TRL adds it; a reward function
that names `environments` gets each row's instance (reward_client/functions.py).

Where botgrpo differs from TRL 1.16, and why (docs/from-trl.md):
- each trajectory gets a new instance (TRL keeps a pool and calls reset on instances of earlier
  steps): nothing an environment forgets to reset can reach another trajectory or step;
- each trajectory's calls run on a thread of their own, side by side with the other trajectories'
  (TRL runs them one after another), each batch of calls, reset and get_reward within
  rollout.environment_deadline_s: an environment that hangs costs its trajectory, not the run;
- a factory or a reset that raises ends the run with one line (TRL raises too), a tool method that
  raises answers the model with TRL's text, {'error': '...'}, and the run goes on.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, Callable

from botgrpo_cli.config import Config
from botgrpo_cli.errors import UserError
from botgrpo_cli.turns.environment import EnvironmentBroken
from botgrpo_cli.turns.tool_calls import ToolCall
from botgrpo_cli.turns.tool_worker import awaited
from botgrpo_cli.turns.tools import ToolResult, tool_schema
from botgrpo_rewards.protocol import first_line, where_raised

ENVIRONMENT_COLUMN = "environment"  # TRL's: the column naming each row's environment when the factories are a dict
NOT_TOOLS = ("reset", "get_reward")  # TRL's lifecycle methods; every other public method is a tool


@dataclass(frozen=True)
class Kind:
    """One factory, probed: the class it makes, its tool methods (TRL's order: by name) and their schemas."""

    name: str | None  # the dict key (None: the one factory)
    factory: Callable[[], Any]
    cls: type
    tools: tuple[str, ...]
    schemas: tuple[dict, ...]

    @property
    def where(self) -> str:
        return where_of(self.name)


def where_of(name: str | None) -> str:
    """How an error names a factory: environment_factory, or environment_factory['name'] in a dict."""
    return "environment_factory" + (f"[{name!r}]" if name is not None else "")


def made(factory: Callable[[], Any], where: str) -> Any:
    """factory(), or EnvironmentBroken saying what it raised."""
    try:
        return factory()
    except Exception as err:
        raise EnvironmentBroken(f"{where}: making an environment raised {type(err).__name__}: {first_line(err)}"
                                f"{where_raised(err)}") from None


def probe(name: str | None, factory: Any) -> Kind:
    """Make one instance (as TRL does at init) to check the factory and read its tools."""
    where = where_of(name)
    if not callable(factory):
        raise UserError(f"{where} must be a class (or a function) that makes an environment, got "
                        f"{type(factory).__name__}: pass the class itself, not an instance")
    instance = made(factory, where)
    cls = type(instance)
    methods = dict(inspect.getmembers(cls, predicate=inspect.isfunction))  # on the class: properties not evaluated
    if "reset" not in methods:
        raise UserError(f"{where}: {cls.__name__} has no reset method; a TRL environment defines "
                        "reset(self, **kwargs), called with the dataset row's columns before each rollout")
    tools = tuple(m for m in methods if m not in NOT_TOOLS and not m.startswith("_"))
    # schemas of bound methods: `self` is not an argument the model gives
    schemas = tuple(tool_schema(getattr(instance, m), f"{cls.__name__}.{m}") for m in tools)
    return Kind(name, factory, cls, tools, schemas)


def environment_reward(cls: type) -> Callable[..., list]:
    """TRL's reward function for an environment class with get_reward: each rollout whose instance
    is exactly that class is scored by it; others get None (not scored by this function). Without
    instances (a scoring outside a rollout) nothing is scored by it."""

    def get_reward(environments: list | None = None, completions: list | None = None, **kwargs: Any) -> list:
        envs = environments if environments is not None else [None] * len(completions or [])
        return [awaited(env.get_reward()) if type(env) is cls else None for env in envs]

    get_reward.__name__ = get_reward.__qualname__ = cls.__name__  # logged as reward/<class>/mean, as in TRL
    get_reward.__module__ = cls.__module__
    return get_reward


class TRLEnvironments:
    """environment_factory, probed: the run's environment (run.environment from Python).
    `for_task(task)` gives the engine its per-trajectory Episode maker."""

    def __init__(self, factory: Any):
        if isinstance(factory, dict):
            if not factory:
                raise UserError("environment_factory is an empty dict: give {name: factory}, each row naming its "
                                f"environment in an {ENVIRONMENT_COLUMN!r} column")
            self.kinds = {name: probe(name, f) for name, f in factory.items()}
        else:
            self.kinds = {None: probe(None, factory)}
        self.multi = isinstance(factory, dict)
        # config.yaml records `<callable MODULE.NAME>` for it (a resume needs it given again, as a reward function)
        first = next(iter(self.kinds.values())).cls
        self.__module__ = first.__module__
        self.__qualname__ = "|".join(k.cls.__name__ for k in self.kinds.values())

    def __call__(self) -> "Episode":  # callable: Config keeps it as given, as it keeps a reward function
        return Episode(self, None)

    def __deepcopy__(self, memo: dict) -> "TRLEnvironments":  # Config.to_dict copies values; factories are shared
        return self

    def reward_functions(self) -> list[Callable[..., list]]:
        """One reward function per class with get_reward, in the factories' order (a class once)."""
        classes = list(dict.fromkeys(k.cls for k in self.kinds.values()))
        return [environment_reward(c) for c in classes if callable(getattr(c, "get_reward", None))]

    def for_task(self, task: Any) -> Callable[[], "Episode"]:
        """The engine's environment: a new Episode per trajectory; `task` gives a row's chat messages."""
        return lambda: Episode(self, task)


class Episode:
    """One trajectory's TRL environment as the engine sees it (turns/environment.py's protocol, with
    tools of its own): `instance` is the user's object, made in reset."""

    def __init__(self, envs: TRLEnvironments, task: Any):
        self.envs, self.task = envs, task
        self.kind: Kind | None = None
        self.instance: Any = None
        self.prompt_messages: list[dict] | None = None  # a chat row's first messages, reset's string included

    @property
    def tool_schemas(self) -> list[dict]:
        return list(self.kind.schemas) if self.kind is not None else []

    @property
    def tool_names(self) -> tuple[str, ...]:
        return self.kind.tools if self.kind is not None else ()

    @property
    def takes_calls(self) -> bool:
        """TRL runs its tool loop when any of the run's environments has tools: a call from a row whose
        own environment has none (or names a tool it lacks) is answered "not found"."""
        return any(k.tools for k in self.envs.kinds.values())

    def reset(self, row: dict) -> list[dict]:
        """The first messages: the row's prompt, with what the instance's reset returned appended to
        its last message (TRL's rule). A text prompt is one user message."""
        name = row.get(ENVIRONMENT_COLUMN) if self.envs.multi else None
        if name not in self.envs.kinds:
            raise EnvironmentBroken(f"a row has {ENVIRONMENT_COLUMN}={name!r}, which is not among "
                                    f"environment_factory's environments: {list(self.envs.kinds)}")
        kind = self.kind = self.envs.kinds[name]
        self.instance = made(kind.factory, kind.where)
        messages, columns = self._prompt(row)
        try:
            observation = awaited(self.instance.reset(**columns))
        except Exception as err:
            raise EnvironmentBroken(f"{kind.where}: {kind.cls.__name__}.reset raised {type(err).__name__}: "
                                    f"{first_line(err)}{where_raised(err)} (row {row.get('id')})") from None
        if observation is not None and not isinstance(observation, str):
            raise EnvironmentBroken(f"{kind.where}: {kind.cls.__name__}.reset returned {type(observation).__name__}; "
                                    "return a string (appended to the last user message) or None")
        if observation:
            last = messages[-1]
            messages = [*messages[:-1], {**last, "content": str(last.get("content", "")) + observation}]
        if isinstance(columns["prompt"], list):  # TRL's reward functions get the prompt as extended
            self.prompt_messages = messages
        return messages

    def _prompt(self, row: dict) -> tuple[list[dict], dict]:
        """The row's prompt as messages, and the columns reset gets: TRL's row (its prompt as the
        dataset gave it, the other columns; not botgrpo's id, nor a dict factory's environment)."""
        from botgrpo_tasks.base import Example

        columns = {k: v for k, v in row.items() if k not in ("id", "prompt")}
        text = str(row.get("prompt", ""))
        chat = None
        if self.task is not None and row.get("id") is not None:
            chat = self.task.messages(Example(id=row["id"], prompt=text, reference=columns))
        if self.envs.multi:
            columns.pop(ENVIRONMENT_COLUMN, None)
        messages = chat or [{"role": "user", "content": text}]
        return [dict(m) for m in messages], {"prompt": chat if chat is not None else text, **columns}

    def step(self, transcript: Any) -> None:
        """A turn without a tool call ends a TRL episode."""
        return None

    def run_tools(self, calls: list[ToolCall]) -> list[ToolResult]:
        """This trajectory's calls on its own instance, in order, answered as TRL answers them."""
        return [self._run(call) for call in calls]

    def _run(self, call: ToolCall) -> ToolResult:
        if call.error is not None:
            return ToolResult(call.name, str({"error": call.error}), "error")
        if call.name not in self.tool_names:
            return ToolResult(call.name, str({"error": f"Tool {call.name} not found."}), "error")
        try:
            result = awaited(getattr(self.instance, call.name)(**call.arguments))
        except Exception as err:  # TRL's answer to a raising tool; the run goes on
            return ToolResult(call.name, str({"error": str(err)}), "error")
        return ToolResult(call.name, str(result))


def user_environment(env: Any) -> Any:
    """What a reward function's `environments` holds for a trajectory: the user's own instance."""
    return env.instance if isinstance(env, Episode) else env


def with_environments(extras: dict, batch: Any) -> dict:
    """TRL's keywords for a batch's reward functions (training or evaluation), with environments:
    each row's instance (`environments`: only functions that name it get it), and a chat row's
    prompt as its reset extended it (TRL's reward functions see that prompt)."""
    if batch.environments is None:
        return extras
    messages = list(extras.get("messages") or [None] * len(batch.environments))
    for i, env in enumerate(batch.environments):
        messages[i] = getattr(env, "prompt_messages", None) or messages[i]
    return {**extras, "messages": messages, "environments": [user_environment(e) for e in batch.environments]}


def environment_setup(cfg: Config, factory: Any, reward_funcs_given: bool) -> None:
    """Trainer(environment_factory=...) -> run.environment, and each get_reward as one more reward
    function of weight 1 after reward_funcs (TRL's order and weight)."""
    if cfg.run.environment is not None:
        raise UserError("environment_factory and args run.environment both name the environment: give one")
    envs = TRLEnvironments(factory)
    cfg.run.environment = envs
    rewards = envs.reward_functions()
    r = cfg.reward
    if not rewards:
        if not (reward_funcs_given or r.function or r.service or r.services or r.url or r.command):
            raise UserError("no reward: pass reward_funcs, or an environment with a get_reward(self) -> float method "
                            "(environment_factory's own reward)")
        return
    if r.service or r.services or r.url or r.command:
        raise UserError(f"environment_factory's {', '.join(f.__name__ for f in rewards)}.get_reward is a reward "
                        "function, which combines with reward functions only: give reward_funcs as Python functions "
                        "(a reward service runs inside one)")
    functions = [] if r.function is None else list(r.function) if isinstance(r.function, list) else [r.function]
    if r.weights is not None:
        if len(r.weights) != len(functions):  # the weights are reward_funcs' only, as in TRL
            raise UserError(f"reward_weights has {len(r.weights)} weights for {len(functions)} reward function(s) in "
                            f"reward_funcs: give one per reward function (environment_factory's get_reward gets "
                            f"weight 1 after them, as in TRL)")
        r.weights = [*r.weights, *[1.0] * len(rewards)]
    r.function = [*functions, *rewards]
