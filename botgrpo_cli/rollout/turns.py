"""Multi-turn rollouts over any engine: the model answers, its tool calls run (turns/tools.py) or the
environment answers (turns/environment.py), their messages are appended through the chat template
(turns/render.py), and the model goes on from the very token ids it sampled, until it answers
without a call (or the environment says done) or `max_turns` model turns are spent.

The batch it returns is a trajectory per row: the completion is everything after the first prompt
(model turns, tool and environment messages); `mask` covers all of it, `loss_mask` only the model's
own tokens (the only ones trained), `turns` gives each model turn's token columns, and texts and
offsets run over the whole transcript, so spans in transcript coordinates reach every turn's tokens.
Turn k > 0 of every live row is sampled in one engine call seeded mix_seed(seed, k): the same seed
and engine numerics give the same trajectories. The engine sees each continuation as a prompt of
token ids; the lean loop keeps each row's KV cache from one turn to the next (FastEngine.keeping_cache),
so a continuation prefills only the appended messages.
"""

from __future__ import annotations

import contextlib
import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterator

import torch

from botgrpo_cli.console import console
from botgrpo_cli.errors import UserError
from botgrpo_cli.rollout.base import RolloutBatch, SamplingParams, prompt_ids_of
from botgrpo_cli.rollout.offsets import OffsetDecoder
from botgrpo_cli.rollout.seeds import mix_seed
from botgrpo_cli.turns.environment import (EnvironmentFailed, Transcript, as_messages, as_response,
                                           call_with_deadline, calls_with_deadline, failed_response)
from botgrpo_cli.turns.render import appended_text, first_prompt, shows_tools
from botgrpo_cli.turns.tool_calls import ToolCall, parse_tool_calls
from botgrpo_cli.turns.tool_worker import oversized
from botgrpo_cli.turns.tools import MAX_MESSAGE_CHARS, Toolbox, ToolResult
from botgrpo_rewards.protocol import DEFAULT_DEADLINE_MS, DEFAULT_MEMORY_MB, ScoreResponse

if TYPE_CHECKING:  # the config is read, never imported at run time
    from botgrpo_cli.config import RolloutConfig, RunConfig

Ended = Callable[[int, str, "ScoreResponse | None"], None]  # (row, transcript text, environment's reward)
STATS = ("turns", "trajectories", "tool_calls", "tool_errors", "tool_timeouts", "env_errors", "oversized_messages",
         "masked_tokens", "trained_tokens")


@dataclass
class TurnSettings:
    max_turns: int = 1  # model turns per trajectory
    tools: Toolbox | None = None
    environment: Callable[[], Any] | None = None  # the class: one instance per trajectory
    environment_deadline_s: float = 30.0
    template_kwargs: dict[str, Any] = field(default_factory=dict)  # the run's chat template arguments
    system_prompt: str | None = None  # put before an environment's first messages
    max_message_chars: int = MAX_MESSAGE_CHARS  # longest environment message a transcript takes (tools: Toolbox's)

    @property
    def schemas(self) -> list[dict] | None:
        return self.tools.schemas if self.tools is not None else None

    @property
    def prompt_kwargs(self) -> dict[str, Any]:
        """The chat template's arguments for first prompts: the run's, plus the tools' schemas."""
        return {**self.template_kwargs, "tools": self.schemas} if self.tools is not None else dict(self.template_kwargs)


def max_turns_of(max_turns: int | None, tools: list, environment: str | None) -> int:
    """rollout.max_turns, or its default: 1, or 4 when the model has tools or an environment."""
    if max_turns is not None:
        return max_turns
    return 4 if tools or environment else 1


def build_settings(tools: list[str], environment: Any, max_turns: int | None, task: Any,
                   template_kwargs: dict, system_prompt: str | None, tool_workers: int = 2,
                   tool_deadline_s: float = 10.0, environment_deadline_s: float = 30.0,
                   max_message_chars: int = MAX_MESSAGE_CHARS, tool_memory_mb: int = DEFAULT_MEMORY_MB
                   ) -> TurnSettings | None:
    """The multi-turn settings (tools imported, not started; the environment class found, or TRL's
    environments from Python bound to the task), or None for single turns. UserError when more turns
    are asked with nothing to answer between them."""
    turns = max_turns_of(max_turns, tools, environment)
    if not (tools or environment or turns > 1):
        return None
    if not (tools or environment or getattr(task, "revises", False)):
        raise UserError(f"rollout.max_turns={turns} needs something to answer the model between turns: run.tools, "
                        f"run.environment, or a task that revises (react, react_synth); task {task.name} does not")
    from botgrpo_cli.turns.environment import load_environment

    toolbox = Toolbox(list(tools), tool_workers, tool_deadline_s, tool_memory_mb, max_message_chars) if tools else None
    if isinstance(environment, str):
        environment = load_environment(environment)
    elif environment is not None:  # from Python: TRL's environment_factory (trl_environments.py)
        environment = environment.for_task(task)
    return TurnSettings(max_turns=turns, tools=toolbox, environment=environment,
                        environment_deadline_s=environment_deadline_s, template_kwargs=dict(template_kwargs),
                        system_prompt=system_prompt, max_message_chars=max_message_chars)


def settings_from(rollout: RolloutConfig, run: RunConfig, task: Any) -> TurnSettings | None:
    """build_settings from a config's rollout and run sections: training and `botgrpo eval` alike."""
    return build_settings(list(run.tools), run.environment, rollout.max_turns, task, run.chat_template_kwargs,
                          run.system_prompt, rollout.tool_workers, rollout.tool_deadline_s,
                          rollout.environment_deadline_s, rollout.max_message_chars, rollout.tool_memory_mb)


def revise_with(settings: TurnSettings, task: Any, pool: Any, options: dict, deadline_ms: int) -> None:
    """Repair turns for a task that revises and has no tools or environment of the user's: its
    service checks each attempt and its diagnostic asks for a revision (turns/feedback.py)."""
    if settings.environment is not None or settings.tools is not None or not getattr(task, "revises", False):
        return
    from botgrpo_cli.turns.feedback import service_feedback

    settings.environment = service_feedback(pool, options, deadline_ms, task.success_metric)
    settings.environment_deadline_s = max(settings.environment_deadline_s, deadline_ms / 1000 + 5)


@contextlib.contextmanager
def turns_over(engine: Any, tok: Any, task: Any, settings: TurnSettings | None, pool: Any = None,
               options: dict | None = None, deadline_ms: int = DEFAULT_DEADLINE_MS) -> Iterator[Any]:
    """The engine, or multi-turn rollouts over it when `settings` is not None: a revising task's
    repair turns checked through `pool` (revise_with), the tools' workers closed after."""
    if settings is None:
        yield engine
        return
    if pool is not None:
        revise_with(settings, task, pool, dict(options or {}), deadline_ms)
    try:
        yield MultiTurn(engine, tok, settings)
    finally:
        if settings.tools is not None:
            settings.tools.close()


@dataclass
class _Trajectory:
    row: dict[str, Any]
    messages: list[dict]
    env: Any = None
    ids: list[int] = field(default_factory=list)  # completion so far (model and appended tokens)
    trained: list[bool] = field(default_factory=list)
    logps: list[float] = field(default_factory=list)
    turns: list[tuple[int, int]] = field(default_factory=list)
    done: bool = False
    finished: bool = False
    tool_calls: int = 0
    tool_errors: int = 0  # calls answered with an error (raised, bad call, timed out, crashed)
    tool_timeouts: int = 0
    env_errors: int = 0
    oversized: int = 0  # tool results and environment messages past rollout.max_message_chars
    error: str | None = None  # why an environment call ended the trajectory early
    transcript: Transcript | None = None  # set when it ends


def _own_tools(env: Any) -> bool:
    """Whether a trajectory's environment answers tool calls itself (TRL's environments, when one of
    the run's environment classes has tool methods: trl_environments.Episode)."""
    return bool(getattr(env, "takes_calls", False))


def row_of(example: Any) -> dict[str, Any]:
    """A dataset example as the row an environment's reset gets: id, prompt and reference columns."""
    if isinstance(example, dict):
        return dict(example)
    return {**dict(getattr(example, "reference", {}) or {}), "id": getattr(example, "id", None),
            "prompt": getattr(example, "prompt", None)}


class MultiTurn:
    """Multi-turn rollouts over `engine` (see the module docstring). After each `generate`,
    `scores` holds the environment's rewards by row and `transcripts` the trajectories;
    take_stats() the counts so far."""

    def __init__(self, engine: Any, tokenizer: Any, settings: TurnSettings):
        self.engine, self.tok, self.settings = engine, tokenizer, settings
        self.pad_id = engine.pad_id
        self.decoder = getattr(engine, "decoder", None) or OffsetDecoder(tokenizer)
        self.eos_ids = list(getattr(engine, "eos_ids", None) or [tokenizer.eos_token_id])
        self._counts = dict.fromkeys(STATS, 0)
        self.scores: dict[int, ScoreResponse] = {}
        self.transcripts: list[Transcript] = []
        self.row_counts: list[dict[str, int]] = []  # per row of the last call: turns, tool_calls, tool_errors
        if settings.tools is not None and not shows_tools(tokenizer, settings.tools.schemas):
            console.print("[yellow]warning:[/] the model's chat template does not show tool schemas (or it has no "
                          "template): the model is not told which tools it has, only a warm start or fine-tune "
                          "that taught it the calls can make them; see docs/multi-turn.md", soft_wrap=True)

    def sync_weights(self) -> None:
        self.engine.sync_weights()

    @property
    def template_kwargs(self) -> dict[str, Any]:
        return self.settings.prompt_kwargs

    # ---------------------------------------------------------------- the loop

    def generate(self, prompts: list[str], n: int, params: SamplingParams, on_done: Ended | None = None,
                 rows: list[Any] | None = None) -> RolloutBatch:
        """n trajectories per prompt (rows i*n .. i*n+n-1 from prompts[i], group id i). With an
        environment, each trajectory's first prompt is its reset(row) (rows[i]: prompt i's example).
        on_done(row, transcript text, response) is called as each trajectory ends; response is the
        environment's reward as a ScoreResponse, or None when the task's reward is to score the text."""
        keeping = getattr(self.engine, "keeping_cache", None)  # the lean loop: each turn prefills only what is new
        with keeping() if keeping is not None else contextlib.nullcontext():
            return self._generate(prompts, n, params, on_done, rows)

    def _generate(self, prompts: list[str], n: int, params: SamplingParams, on_done: Ended | None,
                  rows: list[Any] | None) -> RolloutBatch:
        s = self.settings
        examples = [row_of(r) for r in (rows if rows is not None else [{"prompt": p} for p in prompts])]
        trajectories = [_Trajectory(row=examples[i // n], messages=[]) for i in range(len(prompts) * n)]
        self.scores = {}
        first = self._first_prompts(prompts, n, trajectories)
        if all(first[i * n + k] == first[i * n] for i in range(len(prompts)) for k in range(n)):
            batch = self.engine.generate(first[::n], n, params)  # a group shares its prompt: one prefill
        else:
            batch = self.engine.generate(first, 1, params)
        prompt_ids, prompt_texts = batch.prompt_ids, batch.prompts
        group_ids = torch.arange(len(prompts)).repeat_interleave(n)
        live = list(range(len(trajectories)))
        has_logps = batch.logp_old is not None
        for turn in range(s.max_turns):
            if turn:
                prefixes = [prompt_ids[i] + trajectories[i].ids for i in live]
                batch = self.engine.generate(prefixes, 1, dataclasses.replace(params, seed=mix_seed(params.seed, turn)))
                has_logps = has_logps and batch.logp_old is not None
            for k, i in enumerate(live):
                self._add_model_turn(trajectories[i], batch, k)
            last = turn == s.max_turns - 1
            self._continue(trajectories, live, last, [len(prompt_ids[i]) for i in live])
            self._end([i for i in live if trajectories[i].done], trajectories, on_done)
            live = [i for i in live if not trajectories[i].done]
            if not live:
                break
        return self._batch(trajectories, prompt_ids, prompt_texts, group_ids, has_logps)

    def _first_prompts(self, prompts: list[str], n: int, trajectories: list[_Trajectory]) -> list:
        """Each trajectory's first prompt: the task's, or its environment's reset."""
        s = self.settings
        out = []
        for i, t in enumerate(trajectories):
            if s.environment is None:
                t.messages = [{"role": "user", "content": str(t.row.get("prompt", ""))}]
                out.append(prompts[i // n])
                continue
            t.env = s.environment()
            try:
                first = as_messages(call_with_deadline(t.env.reset, s.environment_deadline_s, dict(t.row)), "reset")
                self._refuse_oversized(t, first, "reset")
            except EnvironmentFailed as err:  # the trajectory runs on the task's prompt, and is scored failed
                t.env_errors, t.error = 1, f"environment: {err}"
                first = None
            if not first:
                t.messages = [{"role": "user", "content": str(t.row.get("prompt", ""))}]
                out.append(prompts[i // n])
                continue
            system = [{"role": "system", "content": s.system_prompt}] if s.system_prompt is not None else []
            t.messages = [*system, *first]
            out.append(first_prompt(self.tok, t.messages, self._schemas(t), s.template_kwargs))
        return out

    def _schemas(self, t: _Trajectory) -> list[dict] | None:
        """The tools a trajectory's prompt shows: the run's, then its environment's own."""
        own = getattr(t.env, "tool_schemas", None)
        return [*(self.settings.schemas or []), *own] if own else self.settings.schemas

    def _add_model_turn(self, t: _Trajectory, batch: RolloutBatch, k: int) -> None:
        n = int(batch.mask[k].sum())
        tokens = batch.completion_ids[k, :n].tolist()
        t.turns.append((len(t.ids), len(t.ids) + n))
        t.ids += tokens
        t.trained += [True] * n
        t.logps += batch.logp_old[k, :n].tolist() if batch.logp_old is not None else [0.0] * n
        t.finished = bool(batch.finished[k])
        t.messages.append({"role": "assistant", "content": batch.texts[k]})

    def _continue(self, trajectories: list[_Trajectory], live: list[int], last: bool,
                  prompt_lengths: list[int]) -> None:
        """Decide each live trajectory's next messages (tool results, the environment's answer) and
        append their tokens; mark the ones that are done."""
        s = self.settings
        calls = {i: parse_tool_calls(trajectories[i].messages[-1]["content"])
                 if s.tools is not None or _own_tools(trajectories[i].env) else [] for i in live}
        pending = [(i, c) for i in live for c in calls[i]] if not last else []
        by_row: dict[int, list] = {}
        for (i, call), result in zip(pending, self._run_calls(trajectories, pending)):
            by_row.setdefault(i, []).append((call, result))
        limit = getattr(self.engine, "context", None)
        asking = [i for i in live if not last and not calls[i] and trajectories[i].env is not None
                  and trajectories[i].error is None]
        stepped = dict(zip(asking, self._environment_steps([trajectories[i] for i in asking])))
        for i, length in zip(live, prompt_lengths):
            t = trajectories[i]
            if calls[i]:
                t.messages[-1]["tool_calls"] = [c.as_message() for c in calls[i]]
            if last:  # out of turns: calls in this last turn are not run (nor counted)
                t.done = True
                continue
            if calls[i]:
                answered = by_row.get(i, [])
                t.tool_calls += len(answered)
                t.tool_errors += sum(r.error is not None for _, r in answered)
                t.tool_timeouts += sum(r.error == "timeout" for _, r in answered)
                t.oversized += sum(r.error == "oversized" for _, r in answered)  # refused by the tool's worker
                new = [{"role": "tool", "name": r.name, "content": r.content} for _, r in answered]
            elif t.env is not None and t.error is None:
                new = stepped.get(i)
            else:
                new = None
            if not new:
                t.done = True
                continue
            ended_by = self.tok.decode([t.ids[-1]]) if t.ids and t.ids[-1] in self.eos_ids else None
            text = appended_text(self.tok, new, self._schemas(t), s.template_kwargs, ended_by)
            ids = prompt_ids_of(self.tok, [text])[0]
            t.ids += ids
            t.trained += [False] * len(ids)
            t.logps += [0.0] * len(ids)
            t.messages += new
            if limit is not None and length + len(t.ids) + 1 >= limit:  # no room left for another turn
                t.done = True

    def _run_calls(self, trajectories: list[_Trajectory], pending: list[tuple[int, ToolCall]]) -> list[ToolResult]:
        """The results of `pending` (row, call), in order: a call the row's environment answers (a
        tool of its own, or a name no tool worker knows) runs on that trajectory's own instance; the
        others on the run's tool workers."""
        s = self.settings
        workers = s.tools.functions if s.tools is not None else {}
        own = {k for k, (i, c) in enumerate(pending) if _own_tools(trajectories[i].env)
               and (c.name in trajectories[i].env.tool_names or c.name not in workers)}
        rest = [k for k in range(len(pending)) if k not in own]
        results: dict[int, ToolResult] = {}
        if rest:  # calls are read only when a tool or the environment can answer them: here the tools
            results.update(zip(rest, s.tools.run([pending[k][1] for k in rest])))
        by_row: dict[int, list[int]] = {}
        for k in sorted(own):
            by_row.setdefault(pending[k][0], []).append(k)
        answers = calls_with_deadline([(trajectories[i].env.run_tools, ([pending[k][1] for k in ks],))
                                       for i, ks in by_row.items()], s.environment_deadline_s)
        for ks, answer in zip(by_row.values(), answers):  # each row's calls on a thread of their own, rows side by side
            for n, k in enumerate(ks):
                name = pending[k][1].name
                if isinstance(answer, EnvironmentFailed):
                    results[k] = ToolResult(name, f"Error: {answer}", "timeout")
                elif len(answer[n].content) > s.max_message_chars:  # as the tool workers refuse it
                    why = oversized(name, len(answer[n].content), s.max_message_chars)
                    results[k] = ToolResult(name, f"Error: {why}", "oversized")
                else:
                    results[k] = answer[n]
        return [results[k] for k in range(len(pending))]

    def _environment_steps(self, trajectories: list[_Trajectory]) -> list[list[dict] | None]:
        """Each trajectory's environment asked for its next messages, side by side."""
        answers = calls_with_deadline([(t.env.step, (self._transcript(t),)) for t in trajectories],
                                      self.settings.environment_deadline_s)
        out = []
        for t, answer in zip(trajectories, answers):
            try:
                if isinstance(answer, EnvironmentFailed):
                    raise answer
                messages = as_messages(answer, "step")
                self._refuse_oversized(t, messages, "step")
                out.append(messages)
            except EnvironmentFailed as err:
                t.env_errors += 1
                t.error = f"environment: {err}"
                out.append(None)
        return out

    # ---------------------------------------------------------------- bounds

    def _refuse_oversized(self, t: _Trajectory, messages: list[dict] | None, what: str) -> None:
        """EnvironmentFailed when one of an environment's messages is past rollout.max_message_chars:
        its trajectory ends as a failed scoring (masked and counted), the run goes on."""
        limit = self.settings.max_message_chars
        longest = max((len(m["content"]) for m in messages or []), default=0)
        if longest > limit:
            t.oversized += 1
            raise EnvironmentFailed(f"{what} returned a message of {longest} characters, more than the {limit} a "
                                    "message may hold (rollout.max_message_chars)")

    # ---------------------------------------------------------------- results

    def _transcript(self, t: _Trajectory) -> Transcript:
        text, offsets = self.decoder.decode(t.ids)
        turns = [(offsets[a][0], offsets[b - 1][1]) if b > a else (0, 0) for a, b in t.turns]
        return Transcript(row=dict(t.row), messages=[dict(m) for m in t.messages], text=text, turns=turns)

    def _end(self, rows: list[int], trajectories: list[_Trajectory], on_done: Ended | None) -> None:
        """These trajectories are over: their transcripts, the environment's rewards (asked side by
        side), and the caller told."""
        for i in rows:
            trajectories[i].transcript = self._transcript(trajectories[i])
        self._score(rows, trajectories)
        if on_done is not None:
            for i in rows:
                on_done(i, trajectories[i].transcript.text, self.scores.get(i))

    def take_stats(self) -> dict[str, float]:
        """Counts since the last call (a training step's): turns/mean, tool calls and errors, masked tokens."""
        c, self._counts = self._counts, dict.fromkeys(STATS, 0)
        return {"turns/mean": c["turns"] / max(1, c["trajectories"]), "turns/tool_calls": float(c["tool_calls"]),
                "turns/tool_errors": float(c["tool_errors"]), "turns/tool_timeouts": float(c["tool_timeouts"]),
                "turns/env_errors": float(c["env_errors"]),
                "turns/oversized_messages": float(c["oversized_messages"]),
                "turns/masked_tokens": float(c["masked_tokens"]), "turns/trained_tokens": float(c["trained_tokens"])}

    def _batch(self, trajectories: list[_Trajectory], prompt_ids: list[list[int]], prompt_texts: list[str],
               group_ids: torch.Tensor, has_logps: bool) -> RolloutBatch:
        b = len(trajectories)
        width = max(1, max(len(t.ids) for t in trajectories))
        completion = torch.full((b, width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((b, width), dtype=torch.bool)
        loss_mask = torch.zeros((b, width), dtype=torch.bool)
        logp = torch.zeros((b, width), dtype=torch.float32)
        texts, offsets, self.transcripts = [], [], []
        self.row_counts = [{"turns": len(t.turns), "tool_calls": t.tool_calls, "tool_errors": t.tool_errors}
                           for t in trajectories]
        for i, t in enumerate(trajectories):
            n = len(t.ids)
            completion[i, :n] = torch.tensor(t.ids, dtype=torch.long)
            mask[i, :n] = True
            loss_mask[i, :n] = torch.tensor(t.trained, dtype=torch.bool)
            logp[i, :n] = torch.tensor(t.logps, dtype=torch.float32)
            assert t.transcript is not None, "every trajectory ends before the batch is made"
            self.transcripts.append(t.transcript)
            texts.append(t.transcript.text)
            offsets.append(self.decoder.decode(t.ids)[1])
        for name, value in (("turns", sum(len(t.turns) for t in trajectories)), ("trajectories", b),
                            ("tool_calls", sum(t.tool_calls for t in trajectories)),
                            ("tool_errors", sum(t.tool_errors for t in trajectories)),
                            ("tool_timeouts", sum(t.tool_timeouts for t in trajectories)),
                            ("env_errors", sum(t.env_errors for t in trajectories)),
                            ("oversized_messages", sum(t.oversized for t in trajectories)),
                            ("trained_tokens", int(loss_mask.sum())),
                            ("masked_tokens", int(mask.sum()) - int(loss_mask.sum()))):
            self._counts[name] += value
        return RolloutBatch(prompt_ids=prompt_ids, completion_ids=completion, mask=mask, texts=texts, offsets=offsets,
                            group_ids=group_ids, finished=torch.tensor([t.finished for t in trajectories]),
                            logp_old=logp if has_logps else None, prompts=prompt_texts, loss_mask=loss_mask,
                            turns=[list(t.turns) for t in trajectories],
                            environments=None if self.settings.environment is None else [t.env for t in trajectories])

    def _score(self, rows: list[int], trajectories: list[_Trajectory]) -> None:
        """The environment's rewards of these trajectories, when it gives them (kept in self.scores)."""
        asked = []
        for i in rows:
            t = trajectories[i]
            if t.error is not None:
                self.scores[i] = failed_response(f"env-{i}", t.error)
            elif t.env is not None and callable(getattr(t.env, "reward", None)):
                asked.append(i)
        values = calls_with_deadline([(trajectories[i].env.reward, (trajectories[i].transcript,)) for i in asked],
                                     self.settings.environment_deadline_s)
        for i, value in zip(asked, values):
            t = trajectories[i]
            if isinstance(value, EnvironmentFailed):
                t.env_errors += 1
                self.scores[i] = failed_response(f"env-{i}", f"environment: {value}")
                continue
            response = as_response(value, f"env-{i}", len(t.transcript.text))
            if response is not None:
                self.scores[i] = response
