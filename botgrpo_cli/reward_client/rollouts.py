"""Rollout files (JSON Lines of score requests without v/op): parse, merge responses, summarise."""

from __future__ import annotations

import gzip
import json
import math
import zlib
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Iterable, Iterator

from botgrpo_cli.errors import UserError
from botgrpo_rewards.protocol import (
    MAX_LINE_BYTES,
    ProtocolError,
    ScoreRequest,
    ScoreResponse,
    error_response,
    read_lines,
    request_from_json,
)

RESPONSE_FIELDS = ("status", "score", "spans", "metrics", "info", "error")


@dataclass
class RolloutLine:
    """One non-blank input line: its request, or why it could not become one."""

    lineno: int  # 1-based line number in the file
    obj: dict | None  # the decoded object (None when the line is not a JSON object)
    raw: str  # the line as read, kept so a malformed one is written out, not lost
    request: ScoreRequest | None = None
    problem: str | None = None  # set exactly when request is None


def parse_line(lineno: int, raw: str, deadline_ms: int | None = None) -> RolloutLine:
    """Turn one line into a request; a malformed line (any content at all) gets `problem` instead."""
    try:
        obj = json.loads(raw)
        json.dumps(obj, allow_nan=False)  # what cannot be sent on (NaN, Infinity) is caught here
    except RecursionError:
        return RolloutLine(lineno, None, raw, problem="JSON nested too deep")
    except ValueError as err:
        problem = "NaN or Infinity is not JSON" if "Out of range float" in str(err) else f"invalid JSON: {err}"
        return RolloutLine(lineno, None, raw, problem=problem)
    if not isinstance(obj, dict):
        return RolloutLine(lineno, None, raw, problem="a rollout line must be a JSON object")
    fields = {k: v for k, v in obj.items() if k not in ("v", "op") and k not in RESPONSE_FIELDS}
    if deadline_ms is not None:
        fields["deadline_ms"] = deadline_ms
    try:
        request = request_from_json({"op": "score", **fields})
    except ProtocolError as err:
        return RolloutLine(lineno, obj, raw, problem=str(err))
    assert isinstance(request, ScoreRequest)
    return RolloutLine(lineno, obj, raw, request=request)


def open_lines(path: Path) -> IO[bytes]:
    """The file as bytes, gunzipped when it is gzip (by its magic bytes, whatever its name)."""
    f = path.open("rb")
    if f.peek(2)[:2] == b"\x1f\x8b":
        return gzip.GzipFile(fileobj=f)  # type: ignore[return-value]
    return f


class InputCutOff(UserError):
    """The file cannot be read past line `lineno` (a truncated or corrupt gzip stream, a read error);
    every line before it was read whole."""

    def __init__(self, path: Path, lineno: int, reason: str):
        self.path, self.lineno, self.reason = path, lineno, reason
        where = f"after line {lineno}" if lineno else "from its start"
        super().__init__(f"{path} cannot be read {where} ({reason}); check or restore the file")


def _read_problem(err: Exception) -> str:
    if isinstance(err, EOFError):
        return "the gzip stream ends early: the file is truncated"
    if isinstance(err, (gzip.BadGzipFile, zlib.error)):
        return f"corrupt gzip data: {err}"
    return getattr(err, "strerror", None) or str(err)


def _lines_of(path: Path) -> Iterator[bytes | None]:
    """read_lines of the (gunzipped) file; a read error is InputCutOff after the last whole line."""
    lineno = 0
    try:
        with open_lines(path) as f:
            for lineno, data in enumerate(read_lines(f), 1):
                yield data
    except (EOFError, OSError, zlib.error) as err:
        raise InputCutOff(path, lineno, _read_problem(err)) from None


def _raw_lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, text) of each non-blank line, read lazily. Undecodable bytes become U+FFFD;
    a line over MAX_LINE_BYTES keeps only its head (it is answered as too large)."""
    for lineno, data in enumerate(_lines_of(path), 1):
        if data is None:
            yield lineno, ""
            continue
        text = data.decode("utf-8", errors="replace").rstrip("\r\n")
        if text.strip():
            yield lineno, text


def iter_rollouts(path: Path, deadline_ms: int | None = None) -> Iterator[RolloutLine]:
    """Parse the non-blank lines of a rollout file (plain or gzip) one at a time."""
    for lineno, raw in _raw_lines(path):
        if raw == "":
            yield RolloutLine(lineno, None, "", problem=f"line is over the {MAX_LINE_BYTES}-byte limit")
        else:
            yield parse_line(lineno, raw, deadline_ms)


def count_rollouts(path: Path) -> int:
    """Non-blank lines of a rollout file (for progress), read in blocks; a file cut off after some
    lines counts those (scoring reports the cut), one unreadable from its start is InputCutOff."""
    n = 0
    try:
        for line in _lines_of(path):
            n += line is None or bool(line.strip())
    except InputCutOff as cut:
        if not cut.lineno:
            raise
    return n


def read_rollouts(path: Path, deadline_ms: int | None = None) -> list[RolloutLine]:
    """Every non-blank line of a rollout file, parsed (see iter_rollouts)."""
    return list(iter_rollouts(path, deadline_ms))


def problem_response(line: RolloutLine) -> ScoreResponse:
    rid = line.obj.get("id") if line.obj else None
    return error_response(rid, "bad_request", f"line {line.lineno}: {line.problem}")


def merge(line: RolloutLine, resp: ScoreResponse) -> dict[str, Any]:
    """The output object: the input's fields plus the response fields (score null unless ok)."""
    out: dict[str, Any] = dict(line.obj) if line.obj is not None else {"line": line.lineno, "raw": line.raw}
    wire = resp.to_json()
    out.update(
        status=resp.status,
        score=wire.get("score"),
        spans=wire.get("spans", []),
        metrics=wire.get("metrics", {}),
        info=wire.get("info", {}),
        error=wire.get("error"),
    )
    return out


def encode_row(row: dict) -> str:
    """One output line: UTF-8 as written, or ASCII escapes when the row holds a lone surrogate."""
    text = json.dumps(row, ensure_ascii=False, allow_nan=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = json.dumps(row, ensure_ascii=True, allow_nan=False)
    return text + "\n"


class Summary:
    """Counts by status, mean score and each metric's mean over ok responses, added one by one."""

    def __init__(self) -> None:
        self.counts: Counter = Counter()
        self._n_ok, self._score = 0, 0.0
        self._metrics: dict[str, list[float]] = defaultdict(lambda: [0.0, 0])

    def add(self, r: ScoreResponse) -> None:
        self.counts[r.status] += 1
        if r.usable:
            self._n_ok += 1
            self._score += r.score
            for name, value in r.metrics.items():
                self._metrics[name][0] += value
                self._metrics[name][1] += 1

    def result(self) -> dict[str, Any]:
        return {
            "counts": {s: self.counts.get(s, 0) for s in ("ok", "error", "timeout")},
            "mean_score": self._score / self._n_ok if self._n_ok else math.nan,
            "metrics": {name: total / n for name, (total, n) in sorted(self._metrics.items())},
        }
