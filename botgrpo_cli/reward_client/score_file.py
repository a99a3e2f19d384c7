"""Score a rollout file in bounded memory, losing nothing when killed.

Lines are read lazily and sent to the service a window ahead; each result is written as soon as
every line before it is written (input order) to `OUT.partial`, which is renamed to OUT at the
end. A killed run continues with `resume=True`: the complete lines already in `OUT.partial` are
kept and their input lines skipped (a half-written last line is cut off).
"""

from __future__ import annotations

import collections
import os
import time
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

from botgrpo_cli.errors import UserError
from botgrpo_cli.reward_client.rollouts import RolloutLine, Summary, encode_row, iter_rollouts, merge, problem_response
from botgrpo_rewards.protocol import ScoreResponse

WINDOW = 512  # requests in flight ahead of the oldest unwritten line: bounds memory, keeps workers busy


@dataclass
class ScoreStats:
    summary: Summary = field(default_factory=Summary)
    written: int = 0  # lines written by this run
    kept: int = 0  # lines already in the output from an earlier run (resume)
    scored: int = 0  # lines sent to the service
    seconds: float = 0.0  # from the first request sent to the last answer


def partial_path(out: Path) -> Path:
    return out.with_name(out.name + ".partial")


def check_paths(source: Path, out: Path) -> None:
    """Refuse an output that would destroy the input or cannot be written, before any scoring."""
    if not source.is_file():
        raise UserError(f"rollout file {source} does not exist; pass a JSONL file of {{id, prompt, completion, reference}} lines")
    for target in (out, partial_path(out)):
        if target.exists() and os.path.samefile(target, source):
            raise UserError(f"the output {target} is the input file; pass another -o (the input is never overwritten)")
    if out.exists() and not out.is_file():
        raise UserError(f"the output {out} is {'a folder' if out.is_dir() else 'not a regular file'}; pass a file path with -o")
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


def score_file(source: Path, out: Path, submit: Callable[[object], Future], *, deadline_ms: int | None = None,
               resume: bool = False, progress: Callable[[int], None] = lambda n: None,
               on_problem: Callable[[RolloutLine], None] = lambda line: None) -> ScoreStats:
    """Score `source` into `out` through `submit(request) -> Future[ScoreResponse]` (see module doc).
    `progress(n)` is called as lines are written (n lines at a time); `on_problem` for each
    malformed line (it is written out with status error)."""
    partial = partial_path(out)
    stats = ScoreStats()
    stats.kept = kept_lines(partial) if resume else 0
    lines = iter_rollouts(source, deadline_ms)
    for _ in range(stats.kept):
        if next(lines, None) is None:
            break
    progress(stats.kept)
    try:
        with partial.open("ab" if resume else "wb") as f:
            def write(line: RolloutLine, resp: ScoreResponse) -> None:
                if line.problem:
                    on_problem(line)
                _write(f, line, resp, stats)
            _pump(lines, submit, write, stats, progress)
            f.flush()
            os.fsync(f.fileno())
        partial.replace(out)
    except OSError as err:
        raise UserError(f"could not write {partial}: {err.strerror or err}; {stats.kept + stats.written} lines are "
                        "saved there: fix the cause, then rerun with --resume to continue") from None
    return stats


def _write(f, line: RolloutLine, resp: ScoreResponse, stats: ScoreStats) -> None:
    f.write(encode_row(merge(line, resp)).encode("utf-8"))
    stats.written += 1
    stats.summary.add(resp)


def _pump(lines: Iterator[RolloutLine], submit: Callable[[object], Future],
          write: Callable[[RolloutLine, ScoreResponse], None], stats: ScoreStats,
          progress: Callable[[int], None]) -> None:
    """Keep up to WINDOW lines in flight; write finished ones from the front, in input order."""
    window: collections.deque[tuple[RolloutLine, Future | None]] = collections.deque()
    start = None
    exhausted = False
    while window or not exhausted:
        while not exhausted and len(window) < WINDOW:
            line = next(lines, None)
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
