"""Find a user's reward function from `MODULE:NAME` or `path/to/file.py:NAME`, and call it as TRL does."""

from __future__ import annotations

import asyncio
import copy
import importlib
import importlib.util
import inspect
import sys
from pathlib import Path
from typing import Any, Callable

SPEC_HINT = "give MODULE:NAME (an importable module) or path/to/file.py:NAME"


class SpecError(ValueError):
    """A reward function spec that is not MODULE:NAME or path/to/file.py:NAME; one line saying so."""


def spec_parts(spec: str) -> tuple[str, str]:
    """(module or file, function name) of a spec; SpecError when it is not one."""
    where, sep, name = spec.rpartition(":")
    if not sep or not where or not name.isidentifier():
        raise SpecError(f"reward function {spec!r} is not MODULE:NAME; {SPEC_HINT}")
    return where, name


def is_file_spec(where: str) -> bool:
    return where.endswith(".py") or "/" in where or "\\" in where


HINT = SPEC_HINT


class ContractError(ValueError):
    """A function's answer breaks the calling contract (not a list, or not one item per completion):
    a programming error that every batch repeats, so the trainer stops at the first one."""


class FunctionLoadError(SpecError):
    """The function could not be found or imported; the message is one line saying why."""


def split_spec(spec: str) -> tuple[str, str]:
    """(module or file, function name) of a spec; FunctionLoadError when it is not one."""
    try:
        return spec_parts(spec)
    except SpecError as err:
        raise FunctionLoadError(str(err)) from None


def load_function(spec: str) -> Callable[..., Any]:
    """The callable a spec names. A file is imported as a module of its own (its folder goes on
    sys.path first, so it may import its neighbours)."""
    where, name = split_spec(spec)
    try:
        module = _import_file(Path(where)) if is_file_spec(where) else importlib.import_module(where)
    except FunctionLoadError:
        raise
    except Exception as err:  # the user's module failed to import: say how, in one line
        raise FunctionLoadError(f"reward function {spec!r}: importing {where} raised "
                                f"{type(err).__name__}: {first_line(err)}") from err
    fn = getattr(module, name, None)
    if fn is None or not callable(fn):
        raise FunctionLoadError(f"reward function {spec!r}: {where} has no function {name!r}")
    return fn


def _import_file(path: Path) -> Any:
    path = path.expanduser().resolve()
    if not path.is_file():
        raise FunctionLoadError(f"reward function file {path} not found; {HINT}")
    sys.path.insert(0, str(path.parent))
    module_name = f"botgrpo_user_reward_{path.stem}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise FunctionLoadError(f"reward function file {path} cannot be imported as Python")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


def first_line(err: BaseException) -> str:
    lines = [ln.strip() for ln in str(err).splitlines() if ln.strip()]
    return lines[0][:500] if lines else ""


def _parameters(fn: Callable[..., Any]) -> tuple[set[str], bool] | None:
    """(named keyword parameters, takes **kwargs), or None when the signature cannot be read."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):  # a builtin or C callable
        return None
    named = {p.name for p in params if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)}
    return named, any(p.kind is p.VAR_KEYWORD for p in params)


def _keep(kwargs: dict, params: tuple[set[str], bool] | None) -> dict:
    """The keywords a function takes: all with **kwargs (or an unreadable signature), else the named."""
    if params is None or params[1]:
        return kwargs
    return {k: v for k, v in kwargs.items() if k in params[0]}


def call_verl(fn: Callable[..., Any], params: tuple[set[str], bool], completions: list[str],
              columns: dict[str, list]) -> list:
    """verl's `compute_score(data_source, solution_str, ground_truth, extra_info)`, once per
    completion; ground_truth is the row's column of that name or, in verl's data layout,
    reward_model.ground_truth."""
    out = []
    for i, completion in enumerate(completions):
        row = {k: v[i] for k, v in columns.items()}
        model = row.get("reward_model") if isinstance(row.get("reward_model"), dict) else {}
        truth = row["ground_truth"] if "ground_truth" in row else model.get("ground_truth")
        out.append(fn(**_keep({"data_source": row.get("data_source"), "solution_str": completion,
                               "ground_truth": truth, "extra_info": row.get("extra_info")}, params)))
    return out


def call_batch(fn: Callable[..., Any], prompts: list, completions: list, columns: dict[str, list],
               extras: dict[str, Any] | None = None) -> list:
    """fn(prompts=..., completions=..., **columns, **extras), TRL's call (extras: TRL's other keywords,
    completion_ids, trainer_state, log_metric, log_extra). A function without **kwargs gets only the
    keywords it names, so `def f(completions, answer)` works as well as `def f(**kw)`. An async
    function is awaited. The function gets copies, so what it changes in place (a list it pops from)
    is its own. A function taking `solution_str` is verl's kind and is called per completion (call_verl)."""
    n = len(completions)
    params = _parameters(fn)
    prompts, completions, columns = copy.deepcopy((prompts, completions, columns))
    if params is not None and "solution_str" in params[0]:
        return call_verl(fn, params, [_text(c) for c in completions], columns)
    result = fn(**_keep({"prompts": prompts, "completions": completions, **columns, **(extras or {})}, params))
    if inspect.isawaitable(result):
        result = asyncio.run(_awaited(result))
    if isinstance(result, tuple):
        result = list(result)
    if not isinstance(result, list):
        try:
            result = list(result)  # a numpy array, a tensor, a generator
        except TypeError:
            raise ContractError(f"returned {type(result).__name__}, not a list with one item per completion") from None
    if len(result) != n:
        raise ContractError(f"returned {len(result)} items for {n} completions (one per completion)")
    return result


async def _awaited(awaitable: Any) -> Any:
    return await awaitable


def _text(completion: Any) -> str:
    """A completion's text: itself, or the content of its last message (conversational data)."""
    if isinstance(completion, list) and completion and isinstance(completion[-1], dict):
        return str(completion[-1].get("content", ""))
    return completion
