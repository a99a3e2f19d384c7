"""Score a rollout file in bounded memory, losing nothing when killed.

Lines are read lazily and sent to the service a window ahead; each result is written as soon as
every line before it is written (input order) to `OUT.partial`, which is renamed to OUT at the
end. Beside it, `OUT.partial.json` records what the partial is made from (the services, --command,
--deadline-ms). A killed run continues with `resume=True`: the complete lines already in
`OUT.partial` are kept (a half-written last line is cut off) and their input lines skipped, once
the record matches this run and every kept line is the output of the input line in its place;
anything else is refused, so a partial is never continued from another file or another service.
An input cut off mid-way (a truncated .gz) has every readable line scored before it is reported.
"""

from __future__ import annotations

import collections
import json
import os
import time
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from botgrpo_cli.errors import UserError
from botgrpo_cli.reward_client.rollouts import (
    RESPONSE_FIELDS,
    InputCutOff,
    RolloutLine,
    Summary,
    encode_row,
    iter_rollouts,
    merge,
    problem_response,
)
from botgrpo_rewards.protocol import ScoreResponse

WINDOW = 512  # requests in flight ahead of the oldest unwritten line: bounds memory, keeps workers busy
RECORD_FORMAT = 1


@dataclass
class ScoreStats:
    summary: Summary = field(default_factory=Summary)
    written: int = 0  # lines written by this run
    kept: int = 0  # lines already in the output from an earlier run (resume)
    scored: int = 0  # lines sent to the service
    seconds: float = 0.0  # from the first request sent to the last answer


def partial_path(out: Path) -> Path:
    return out.with_name(out.name + ".partial")


def record_path(out: Path) -> Path:
    """What the partial output is made from (JSON), next to it."""
    return out.with_name(out.name + ".partial.json")


def check_paths(source: Path, out: Path) -> None:
    """Refuse an output that would destroy the input or cannot be written, before any scoring."""
    if not source.is_file():
        raise UserError(f"rollout file {source} does not exist; pass a JSONL file of {{id, prompt, completion, reference}} lines")
    if not out.name or out.is_dir():  # '-o .', '-o /', '-o ""'
        raise UserError(f"the output {str(out) or repr('')} is a folder; pass a file path with -o, e.g. -o scored.jsonl")
    for target in (out, partial_path(out)):
        if target.exists() and os.path.samefile(target, source):
            raise UserError(f"the output {target} is the input file; pass another -o (the input is never overwritten)")
    if out.exists() and not out.is_file():
        raise UserError(f"the output {out} is not a regular file; pass a file path with -o")
    if not out.parent.is_dir():
        raise UserError(f"the output folder {out.parent} does not exist; create it or pass another -o")
    if not os.access(out.parent, os.W_OK):
        raise UserError(f"the output folder {out.parent} is not writable; pass another -o")


def kept_lines(partial: Path) -> int:
    """Complete lines in a partial output (cutting off a half-written last one)."""
    if not partial.exists():
        return 0
    n, good_end = 0, 0
    with partial.open("rb") as f:
        for line in f:
            if not line.endswith(b"\n"):
                break
            n += 1
            good_end += len(line)
    if good_end != partial.stat().st_size:
        with partial.open("r+b") as f:
            f.truncate(good_end)
    return n


def _write_record(out: Path, made_from: dict[str, Any]) -> None:
    path = record_path(out)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps({"format": RECORD_FORMAT, "made_from": made_from}, sort_keys=True) + "\n")
    tmp.replace(path)


def _check_record(out: Path, made_from: dict[str, Any]) -> None:
    """--resume: the partial must come from the same services and settings as this run."""
    path, partial = record_path(out), partial_path(out)
    try:
        saved = json.loads(path.read_text())["made_from"]
    except (OSError, ValueError, KeyError, TypeError):
        raise UserError(f"--resume: {path} (what {partial} was made from) is missing or unreadable, so it cannot be "
                        "continued safely; run without --resume to start again") from None
    wanted = json.loads(json.dumps(made_from, sort_keys=True))  # the same JSON view as the saved one
    changed = [f"{k}: partial {saved.get(k)!r}, now {wanted.get(k)!r}" for k in sorted(set(saved) | set(wanted))
               if saved.get(k) != wanted.get(k)]
    if changed:
        raise UserError(f"--resume: {partial} was scored with other settings ({'; '.join(changed)}); rerun with "
                        "the same --service/--command/--deadline-ms, or without --resume to start again")


def _input_fields(row: dict) -> dict:
    return {k: v for k, v in row.items() if k not in RESPONSE_FIELDS}


def _skip_kept(lines: Iterator[RolloutLine], partial: Path, kept: int) -> None:
    """Advance `lines` past the `kept` lines of `partial`, each checked to be the output of its input line."""
    with partial.open("rb") as f:
        for n, written in enumerate(f, 1):
            if n > kept:
                break
            line = next(lines, None)
            try:
                row = json.loads(written)
            except ValueError:
                row = None
            source = (_input_fields(line.obj) if line is not None and line.obj is not None
                      else {"line": line.lineno, "raw": line.raw} if line is not None else None)
            if source is None or not isinstance(row, dict) or _input_fields(row) != source:
                raise UserError(f"--resume: line {n} of {partial} was not made from line {n} of this input (the "
                                "input changed, or it is another file); run without --resume to start again")


def _resume_from(lines: Iterator[RolloutLine], out: Path, made_from: dict[str, Any]) -> int:
    """The kept lines' count, `lines` advanced past them; UserError when the partial may not be continued."""
    _check_record(out, made_from)
    kept = kept_lines(partial_path(out))
    _skip_kept(lines, partial_path(out), kept)
    return kept


def check_resume(source: Path, out: Path, deadline_ms: int | None, made_from: dict[str, Any]) -> None:
    """Refuse (UserError, one line) a --resume that would continue another input's or service's partial."""
    _resume_from(iter_rollouts(source, deadline_ms), out, {"deadline_ms": deadline_ms, **made_from})


def score_file(source: Path, out: Path, submit: Callable[[object], Future], *, deadline_ms: int | None = None,
               resume: bool = False, progress: Callable[[int], None] = lambda n: None,
               on_problem: Callable[[RolloutLine], None] = lambda line: None,
               made_from: dict[str, Any] | None = None) -> ScoreStats:
    """Score `source` into `out` through `submit(request) -> Future[ScoreResponse]` (see module doc).
    `progress(n)` is called as lines are written (n lines at a time); `on_problem` for each
    malformed line (it is written out with status error). `made_from` (JSON) describes the service
    side; a resumed run must give the same."""
    partial = partial_path(out)
    made_from = {"deadline_ms": deadline_ms, **(made_from or {})}
    stats = ScoreStats()
    lines = iter_rollouts(source, deadline_ms)
    if resume:
        stats.kept = _resume_from(lines, out, made_from)
    progress(stats.kept)
    cut: InputCutOff | None = None
    try:
        if not resume:
            _write_record(out, made_from)
        with partial.open("ab" if resume else "wb") as f:
            def write(line: RolloutLine, resp: ScoreResponse) -> None:
                if line.problem:
                    on_problem(line)
                _write(f, line, resp, stats)
            cut = _pump(lines, submit, write, stats, progress)
            f.flush()
            os.fsync(f.fileno())
        if cut is None:
            partial.replace(out)
            record_path(out).unlink(missing_ok=True)
    except OSError as err:
        raise UserError(f"could not write {partial}: {err.strerror or err}; {_saved(partial)} lines are saved "
                        "there: fix the cause, then rerun with --resume to continue") from None
    if cut is not None:
        raise UserError(f"{source} cannot be read after line {cut.lineno} ({cut.reason}); the "
                        f"{stats.kept + stats.written} lines before it are scored in {partial}: restore the whole "
                        "file and rerun with --resume to finish, or use the partial as it is")
    return stats


def _saved(partial: Path) -> str:
    """Whole lines on disk (a half-written last one cut off, so --resume continues cleanly)."""
    try:
        return str(kept_lines(partial))
    except OSError:
        return "some"


def _write(f, line: RolloutLine, resp: ScoreResponse, stats: ScoreStats) -> None:
    f.write(encode_row(merge(line, resp)).encode("utf-8"))
    stats.written += 1
    stats.summary.add(resp)


def _pump(lines: Iterator[RolloutLine], submit: Callable[[object], Future],
          write: Callable[[RolloutLine, ScoreResponse], None], stats: ScoreStats,
          progress: Callable[[int], None]) -> InputCutOff | None:
    """Keep up to WINDOW lines in flight; write finished ones from the front, in input order.
    Returns where the input was cut off, once every line before the cut is written."""
    window: collections.deque[tuple[RolloutLine, Future | None]] = collections.deque()
    start = None
    exhausted = False
    cut = None
    while window or not exhausted:
        while not exhausted and len(window) < WINDOW:
            try:
                line = next(lines, None)
            except InputCutOff as err:
                line, cut = None, err
            if line is None:
                exhausted = True
                break
            if line.request is not None:
                start = start if start is not None else time.monotonic()
                stats.scored += 1
            window.append((line, submit(line.request) if line.request is not None else None))
        done = 0
        while window and (window[0][1] is None or window[0][1].done()):
            line, fut = window.popleft()
            write(line, fut.result() if fut is not None else problem_response(line))
            done += 1
        if done:
            progress(done)
        elif window:
            window[0][1].result()  # wait for the oldest in flight
    if start is not None:
        stats.seconds = time.monotonic() - start
    return cut
