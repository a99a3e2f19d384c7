"""Environments (`run.environment: FILE.py:NAME` or `MODULE:NAME`): what a tool list cannot express
(a game, a simulator, a user simulator, a grader that talks back).

The class named is instantiated once per trajectory (no arguments) and may keep state:

    class MyEnv:
        def reset(self, row: dict) -> list[dict] | str:
            '''The first messages for a dataset row (its `prompt`, `id` and reference columns);
            a string is one user message.'''
        def step(self, transcript: Transcript) -> list[dict] | str | None:
            '''After each model turn that called no tool: the next messages (a string is one user
            message), or None when the episode is over.'''
        def reward(self, transcript: Transcript) -> float | tuple[float, list] | dict | None:
            '''Optional. The trajectory's score, with optional spans (start, end, reward) in
            transcript coordinates (code points of transcript.text); a dict may hold score, spans
            and metrics. None (or no method): the task's reward scores the transcript.'''

An environment may also answer tool calls itself, on its own instance (TRL's environments do:
trl_environments.Episode): `takes_calls` (true), `tool_names`, `tool_schemas` (shown after the run's
tools in its trajectory's prompt) and `run_tools(calls) -> [ToolResult]`.

Each call runs with a deadline (`rollout.environment_deadline_s`). A call that raises or runs past
it ends that trajectory (counted as an environment error; a reward that fails marks the row as a
failed scoring: masked and counted), never the run, unless what it raised is an EnvironmentBroken
(an environment that cannot run at all: TRL's factory or reset failing), which ends the run with
its line. A call past its deadline is left running on a daemon thread, since Python cannot stop a
thread: an environment that may hang for good belongs behind a tool or a reward service, which run
in processes that are killed.
"""

from __future__ import annotations

import dataclasses
import inspect
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from botgrpo_cli.errors import UserError
from botgrpo_cli.reward_client.verdicts import checked
from botgrpo_rewards.protocol import SpecError, first_line, load_function
from botgrpo_rewards.protocol import absolute_spec
from botgrpo_rewards.protocol import ErrorInfo, ScoreResponse, Span


@dataclass
class Transcript:
    """A trajectory as an environment (or a reward on transcripts) sees it."""

    row: dict[str, Any]  # the dataset row: prompt, id and reference columns
    messages: list[dict]  # the whole conversation: first messages, assistant turns, tool and environment messages
    text: str  # everything after the first prompt, as decoded from its tokens (the completion the reward sees)
    turns: list[tuple[int, int]] = field(default_factory=list)  # code points of each model turn in text


class EnvironmentFailed(RuntimeError):
    """An environment call raised or ran past its deadline (the message says which)."""


class EnvironmentBroken(UserError):
    """An environment that cannot run at all (TRL's factory or reset raised): the run ends with this
    line, as TRL's does, where an EnvironmentFailed costs one trajectory."""


def load_environment(spec: str) -> Callable[[], Any]:
    """The environment class a spec names, checked for reset and step (UserError otherwise)."""
    try:
        cls = load_function(absolute_spec(spec))
    except SpecError as err:  # a malformed spec, or one that does not import
        raise UserError(str(err).replace("reward function", "environment", 1)) from None
    missing = [m for m in ("reset", "step") if not callable(getattr(cls, m, None))]
    if not inspect.isclass(cls) or missing:
        raise UserError(f"environment {spec}: needs a class with reset(row) and step(transcript) methods"
                        + (f" (missing: {', '.join(missing)})" if missing else ""))
    return cls


def call_with_deadline(fn: Callable[..., Any], deadline_s: float, *args: Any) -> Any:
    """fn(*args) on a daemon thread; EnvironmentFailed when it raises or is not back within deadline_s."""
    result = calls_with_deadline([(fn, args)], deadline_s)[0]
    if isinstance(result, EnvironmentFailed):
        raise result
    return result


def calls_with_deadline(calls: list[tuple[Callable[..., Any], tuple]], deadline_s: float) -> list[Any]:
    """Each fn(*args) on a daemon thread of its own, side by side (an environment that asks a
    service waits in parallel); per call its value, or an EnvironmentFailed saying why not."""
    boxes: list[dict[str, Any]] = [{} for _ in calls]

    def target(fn: Callable[..., Any], args: tuple, box: dict[str, Any]) -> None:
        try:
            box["value"] = fn(*args)
        except BaseException as err:  # reported to the caller, whatever it was
            box["error"] = err

    threads = [threading.Thread(target=target, args=(fn, args, box), name="environment-call", daemon=True)
               for (fn, args), box in zip(calls, boxes)]
    for thread in threads:
        thread.start()
    until = time.monotonic() + deadline_s
    out = []
    for (fn, _), thread, box in zip(calls, threads, boxes):
        thread.join(max(0.0, until - time.monotonic()))
        name = getattr(fn, "__qualname__", fn)
        if thread.is_alive():
            out.append(EnvironmentFailed(f"{name} did not return within {deadline_s:g} s"))
        elif "error" in box:
            err = box["error"]
            if isinstance(err, EnvironmentBroken):
                raise err
            out.append(EnvironmentFailed(f"{name} raised {type(err).__name__}: {first_line(err)}"))
        else:
            out.append(box.get("value"))
    return out


def as_messages(value: Any, what: str) -> list[dict] | None:
    """An environment's answer -> messages (None: done). A string is one user message."""
    if value is None:
        return None
    if isinstance(value, str):
        return [{"role": "user", "content": value}]
    if isinstance(value, dict):
        value = [value]
    if isinstance(value, (list, tuple)) and all(isinstance(m, dict) and "role" in m for m in value):
        return [{**m, "content": str(m.get("content", ""))} for m in value]
    raise EnvironmentFailed(f"{what} returned {type(value).__name__}; return a string, a list of "
                            f"{{'role', 'content'}} messages, or None")


def as_response(value: Any, rid: str, text_length: int) -> ScoreResponse | None:
    """An environment's reward -> a ScoreResponse (None: the task's reward decides), checked as a
    reward function's verdict is (verdicts.checked: a finite score, integer spans inside the
    transcript, finite metrics); a reward that fails the checks is a failed scoring saying why."""
    if value is None:
        return None
    if isinstance(value, ScoreResponse):  # a service's own answer, passed on
        response = dataclasses.replace(value, id=rid)
    else:
        score, spans, metrics = value, [], {}
        try:
            if isinstance(value, dict):
                score, spans, metrics = value.get("score"), value.get("spans") or [], value.get("metrics") or {}
            elif isinstance(value, (tuple, list)):
                score, spans = value
            response = ScoreResponse(id=rid, status="ok", score=score, spans=[Span(s, e, r) for s, e, r in spans],
                                     metrics=dict(metrics))
        except (TypeError, ValueError) as err:
            return failed_response(rid, "the environment's reward is not a score, (score, spans) with (start, end, "
                                        f"reward) spans, or a dict of score, spans and metrics: {err}")
    return checked(response, text_length, "the environment's reward")


def failed_response(rid: str, message: str) -> ScoreResponse:
    """A failed scoring (masked and counted) that says why."""
    return ScoreResponse(id=rid, status="error", error=ErrorInfo(type="backend", message=message))
