"""Rollout files (JSON Lines of score requests without v/op): parse, merge responses, summarise."""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from botgrpo_rewards.protocol import ProtocolError, ScoreRequest, ScoreResponse, error_response, request_from_json

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
    """Turn one line into a request; a malformed line gets `problem` instead."""
    try:
        obj = json.loads(raw)
    except ValueError as err:
        return RolloutLine(lineno, None, raw, problem=f"invalid JSON: {err}")
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


def read_rollouts(path: Path, deadline_ms: int | None = None) -> list[RolloutLine]:
    """Parse every non-blank line of a rollout file (undecodable bytes become U+FFFD)."""
    text = path.read_text(encoding="utf-8", errors="replace")
    # split on "\n" only: str.splitlines() would also break inside strings holding U+2028 and friends
    lines = (raw.rstrip("\r") for raw in text.split("\n"))
    return [parse_line(i, raw, deadline_ms) for i, raw in enumerate(lines, 1) if raw.strip()]


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


def write_jsonl(path: Path, rows: list[dict]) -> None:
    with path.open("w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False, allow_nan=False) + "\n")


def summarize(responses: list[ScoreResponse]) -> dict[str, Any]:
    """Counts by status, mean score and each metric's mean over ok responses."""
    counts = Counter(r.status for r in responses)
    ok = [r for r in responses if r.usable]
    sums: dict[str, list[float]] = defaultdict(list)
    for r in ok:
        for name, value in r.metrics.items():
            sums[name].append(value)
    return {
        "counts": {s: counts.get(s, 0) for s in ("ok", "error", "timeout")},
        "mean_score": sum(r.score for r in ok) / len(ok) if ok else math.nan,  # type: ignore[misc]
        "metrics": {name: sum(v) / len(v) for name, v in sorted(sums.items())},
    }
