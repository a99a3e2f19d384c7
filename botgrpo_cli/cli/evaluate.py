"""`botgrpo eval`: Pass@k, compile and render rates, and a judged win rate for a model on a task."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from botgrpo_cli.cli.options import CHOICES, CONFIG_HELP, Threads, Workers, listing_choices, set_threads
from botgrpo_cli.errors import UserError


def parse_task_options(pairs: list[str], flag: str = "--task-option") -> dict[str, Any]:
    """key=value pairs; values are read as JSON when they parse (true, 3, 0.5), else kept as text."""
    options: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise UserError(f"{flag} {pair!r}: write it as key=value, e.g. "
                            f"{'path=problems.jsonl' if flag == '--task-option' else 'enable_thinking=false'}")
        try:
            options[key.strip()] = json.loads(value)
        except json.JSONDecodeError:
            options[key.strip()] = value
    return options


# flags that mean what a training config field means: their help is that field's (config.py), and
# their defaults are the field's (tested to agree)
MIRRORS = {"temperature": "rollout.temperature", "top_p": "rollout.top_p", "top_k": "rollout.top_k",
           "min_p": "rollout.min_p", "repetition_penalty": "rollout.repetition_penalty", "max_new_tokens": "rollout.max_new_tokens",
           "system_prompt": "run.system_prompt", "chat_template_kwarg": "run.chat_template_kwargs",
           "chat_template": "run.chat_template",
           "thinking_budget": "rollout.thinking_budget", "autocast": "model.autocast", "tool": "run.tools",
           "environment": "run.environment", "max_turns": "rollout.max_turns"}
# every flag that sets a config field (EvalOptions.config): the mirrors, and those with help of their own
SETS = {**MIRRORS, "task": "run.task", "task_option": "run.task_options", "seed": "run.seed",
        "workers": "reward.workers", "function": "reward.function", "url": "reward.url", "service": "reward.service"}


def config_of(flags: dict[str, Any]) -> Any:
    """The Config the flags {name: value} set (SETS), checked as training checks a config; an error
    names the flag (--top-k) where the check names the field (rollout.top_k)."""
    from botgrpo_cli.config import from_values

    values: dict[str, dict[str, Any]] = {}
    for name, value in flags.items():
        section, key = SETS[name].split(".")
        values.setdefault(section, {})[key] = value
    try:
        return from_values(values)
    except UserError as err:
        raise UserError(as_flags(str(err))) from None


def as_flags(message: str) -> str:
    """A config check's message with each field an eval flag sets named as that flag."""
    for name, dotted in SETS.items():
        message = re.sub(rf"{re.escape(dotted)}(?!\w)", "--" + name.replace("_", "-"), message)
    return message


# the registries whose names the help of these options lists
EVAL_CHOICES = listing_choices(MIRRORS, task="botgrpo_tasks:list_tasks", split="botgrpo_cli.evaluation.runner:SPLITS",
                               judge="botgrpo_cli.evaluation.pairwise:JUDGES",
                               autocast="botgrpo_cli.config:AUTOCAST_SETTINGS",
                               chat_template="botgrpo_tasks.base:CHAT_TEMPLATE")


def register(app: typer.Typer) -> None:
    @app.command("eval", cls=EVAL_CHOICES)
    def evaluate(
        task: Annotated[str, typer.Option("--task", help=f"One of {CHOICES} (installed tasks included).")],
        model: Annotated[str, typer.Option("--model", help="Hub id, model folder, .gguf file, checkpoint folder, or a "
                                                           "run directory of `botgrpo train` (every checkpoint, "
                                                           "plotted vs step).")],
        out: Annotated[Path, typer.Option("--out", help="Folder for eval.json, eval.md, rollouts.jsonl (every scored "
                                                        "completion, for `botgrpo reward score`), screenshots and plots.")],
        n: Annotated[int, typer.Option("--n", help="Samples per problem.")] = 4,
        k: Annotated[str, typer.Option("--k", help="Pass@k values, comma-separated; each at most --n.")] = "1",
        temperature: Annotated[float, typer.Option(help=CONFIG_HELP)] = 1.0,
        top_p: Annotated[float, typer.Option("--top-p", help=CONFIG_HELP)] = 1.0,
        top_k: Annotated[int, typer.Option("--top-k", help=CONFIG_HELP)] = 0,
        min_p: Annotated[float, typer.Option("--min-p", help=CONFIG_HELP)] = 0.0,
        repetition_penalty: Annotated[float, typer.Option("--repetition-penalty", help=CONFIG_HELP)] = 1.0,
        max_new_tokens: Annotated[Optional[int], typer.Option("--max-new-tokens", help=CONFIG_HELP)] = None,
        seed: Annotated[int, typer.Option(help="Fixes the samples (and the bootstrap interval).")] = 0,
        workers: Workers = 1,
        split: Annotated[str, typer.Option("--split", help=f"One of {CHOICES}: eval is the task's held-out "
                                           "problems, all every problem (for aime the whole file).")] = "eval",
        limit: Annotated[Optional[int], typer.Option("--limit", help="Evaluate the first N problems only.")] = None,
        task_option: Annotated[Optional[list[str]], typer.Option("--task-option", help="Task option key=value "
                                                                 "(repeatable), e.g. path=aime.jsonl.")] = None,
        against: Annotated[Optional[str], typer.Option("--against", help="A second model: judged win rate "
                                                       "of --model over it on the same prompts.")] = None,
        judge: Annotated[str, typer.Option("--judge", help=f"Pairwise judge for --against, one of {CHOICES} "
                                           "(auto: vlm when BOTGRPO_VLM_* is set, else similarity, for "
                                           "React tasks; score otherwise).")] = "auto",
        render: Annotated[bool, typer.Option("--render/--no-render", help="React tasks: render every sample "
                                             "(screenshots, render rate, similarity).")] = True,
        batch_size: Annotated[int, typer.Option("--batch-size", help="Completions per generate call, in whole "
                                                "problems (at least one problem's --n); bounds memory and how "
                                                "long one call runs before progress is shown.")] = 32,
        system_prompt: Annotated[Optional[str], typer.Option("--system-prompt", help=CONFIG_HELP)] = None,
        chat_template_kwarg: Annotated[Optional[list[str]], typer.Option("--chat-template-kwarg", help=f"{CONFIG_HELP}; "
                                       "here key=value, repeatable (enable_thinking=false)")] = None,
        chat_template: Annotated[str, typer.Option("--chat-template", help=f"{CONFIG_HELP}; one of {CHOICES}")] = "auto",
        thinking_budget: Annotated[Optional[int], typer.Option("--thinking-budget", help=CONFIG_HELP)] = None,
        autocast: Annotated[str, typer.Option("--autocast", help=f"{CONFIG_HELP}; one of {CHOICES}")] = "auto",
        threads: Threads = 0,
        function: Annotated[Optional[str], typer.Option("--function", help="Score with this Python reward function "
                                                        "(MODULE:NAME or path/to/file.py:NAME) instead of the task's "
                                                        "service; what task prompts needs.")] = None,
        url: Annotated[Optional[list[str]], typer.Option("--url", help="Score on this running service "
                                                         "(http://HOST:PORT; repeat for several; token from "
                                                         "$BOTGRPO_REWARD_TOKEN) instead of a local one.")] = None,
        service: Annotated[Optional[str], typer.Option("--service", help="Score with this reward service instead of "
                                                       "the task's (e.g. math for task prompts).")] = None,
        tool: Annotated[Optional[list[str]], typer.Option("--tool", help=f"{CONFIG_HELP}; here one per flag, "
                                                          "repeatable")] = None,
        environment: Annotated[Optional[str], typer.Option("--environment", help=CONFIG_HELP)] = None,
        max_turns: Annotated[Optional[int], typer.Option("--max-turns", help=CONFIG_HELP)] = None,
    ) -> None:
        """Evaluate a model on a task: unbiased Pass@k, compile/render rates, judged win rate."""
        from botgrpo_cli.console import out as stdout
        from botgrpo_cli.evaluation import EvalOptions, run_eval
        from botgrpo_cli.evaluation.metrics import parse_ks

        try:
            ks = parse_ks(k)
        except ValueError as err:
            raise UserError(f"--k: {err}") from None
        set_threads(threads)
        config = config_of({
            "task": task, "task_option": parse_task_options(task_option or []), "seed": seed, "workers": workers,
            "temperature": temperature, "top_p": top_p, "top_k": top_k, "min_p": min_p,
            "repetition_penalty": repetition_penalty, "max_new_tokens": max_new_tokens,
            "system_prompt": system_prompt, "chat_template": chat_template, "thinking_budget": thinking_budget,
            "chat_template_kwarg": parse_task_options(chat_template_kwarg or [], "--chat-template-kwarg"),
            "autocast": autocast, "tool": list(tool or []), "environment": environment, "max_turns": max_turns,
            "function": function, "url": list(url) if url else None, "service": service})
        opts = EvalOptions(model=model, out=out, config=config, n=n, ks=ks, split=split, limit=limit,
                           against=against, judge=judge, render=render, batch_size=batch_size)
        result = run_eval(opts)
        summary = (out / "eval.md").read_text(encoding="utf-8").split("\n## Per problem")[0].rstrip()
        stdout.print(summary, markup=False, soft_wrap=True)
        stdout.print(f"\nwrote {out / 'eval.json'}, {out / 'eval.md'} and {out / 'rollouts.jsonl'}")
        if result.get("plot"):
            stdout.print(f"plot: {out / result['plot']}")
