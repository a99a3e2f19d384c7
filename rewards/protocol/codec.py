"""Protocol v1's encoding: objects to lines and lines (bytes or text) to checked objects."""

from __future__ import annotations

import json
import math
from typing import IO, Any, Iterator

from botgrpo_rewards.protocol.checks import (
    check_options,
    check_version,
    clean_info,
    readable_id,
    typed_field,
    validate_metrics,
    validate_score,
    validate_spans,
)
from botgrpo_rewards.protocol.wire import (
    DEFAULT_DEADLINE_MS,
    MAX_COMPLETION_CHARS,
    MAX_DEADLINE_MS,
    MAX_LINE_BYTES,
    MAX_PROMPT_CHARS,
    STATUS_OK,
    STATUSES,
    Hello,
    Message,
    Ping,
    Pong,
    ProtocolError,
    Request,
    ScoreRequest,
    ScoreResponse,
    Shutdown,
    Span,
    error_response,
)


def encode(msg: Any) -> str:
    """One protocol line (no trailing newline). ASCII-escaped, so lone surrogates survive."""
    return json.dumps(msg.to_json(), ensure_ascii=True, allow_nan=False, separators=(",", ":"))


def read_lines(stream: IO[bytes], limit: int | None = None) -> Iterator[bytes | None]:
    """Lines of a byte stream (split on b"\\n" only); a line over `limit` bytes (default
    MAX_LINE_BYTES) is skipped, without being held in memory, and yields None in its place."""
    limit = MAX_LINE_BYTES if limit is None else limit
    while True:
        line = stream.readline(limit + 1)
        if not line:
            return
        if len(line) > limit and not line.endswith(b"\n"):
            while True:
                rest = stream.readline(1 << 20)
                if not rest or rest.endswith(b"\n"):
                    break
            yield None
            continue
        yield line


def _loads(line: str | bytes) -> dict:
    if isinstance(line, bytes):
        if len(line) > MAX_LINE_BYTES:
            raise ProtocolError(f"line of {len(line)} bytes is over the {MAX_LINE_BYTES}-byte limit", type="too_large")
        line = line.decode("utf-8", errors="replace")
    elif len(line) > MAX_LINE_BYTES:
        raise ProtocolError(f"line of {len(line)} characters is over the {MAX_LINE_BYTES} limit", type="too_large")
    try:
        obj = json.loads(line)
    except (json.JSONDecodeError, RecursionError) as err:
        raise ProtocolError(f"invalid JSON: {err}") from None
    if not isinstance(obj, dict):
        raise ProtocolError("a protocol line must be a JSON object")
    return obj


def request_from_json(obj: dict) -> Request:
    """Validate a decoded request object (score, ping or shutdown)."""
    rid = readable_id(obj)
    check_version(obj, rid)
    op = obj.get("op", "score")
    if op == "ping":
        return Ping(id=obj.get("id"))
    if op == "shutdown":
        return Shutdown()
    if op != "score":
        raise ProtocolError(f"unknown op {op!r} (expected score, ping or shutdown)", rid)
    if rid is None:
        raise ProtocolError("field 'id' must be a string or an integer", None)
    completion = typed_field(obj, "completion", str, rid, what="a string")
    prompt = typed_field(obj, "prompt", str, rid, "", what="a string")
    if len(completion) > MAX_COMPLETION_CHARS:
        raise ProtocolError(f"completion of {len(completion)} characters is over the {MAX_COMPLETION_CHARS} limit", rid, "too_large")
    if len(prompt) > MAX_PROMPT_CHARS:
        raise ProtocolError(f"prompt of {len(prompt)} characters is over the {MAX_PROMPT_CHARS} limit", rid, "too_large")
    reference = typed_field(obj, "reference", dict, rid, {}, what="an object") or {}
    options = typed_field(obj, "options", dict, rid, {}, what="an object") or {}
    check_options(options, rid)
    deadline = typed_field(obj, "deadline_ms", (int, float), rid, DEFAULT_DEADLINE_MS, what="a number")
    if not math.isfinite(deadline) or deadline <= 0:
        raise ProtocolError("field 'deadline_ms' must be a positive number", rid)
    return ScoreRequest(
        id=rid,
        prompt=prompt,
        completion=completion,
        reference=reference,
        options=options,
        deadline_ms=int(min(deadline, MAX_DEADLINE_MS)),
    )


def decode_request(line: str | bytes) -> Request:
    """Parse one line sent to a service. Raises ProtocolError (with the id when readable)."""
    obj = _loads(line)
    try:
        return request_from_json(obj)
    except ProtocolError:
        raise
    except Exception as err:  # defensive: never let a weird line kill a service
        raise ProtocolError(f"bad request: {err}", readable_id(obj)) from None


def response_from_json(obj: dict, n_chars: int | None = None) -> ScoreResponse:
    """Validate a decoded score response. `n_chars` (the completion length) bounds the spans."""
    rid = obj.get("id")
    check_version(obj, rid)
    status = obj.get("status")
    if status not in STATUSES:
        raise ProtocolError(f"status must be one of {STATUSES}, got {status!r}", rid, "bad_response")
    info = obj.get("info") or {}
    if not isinstance(info, dict):
        raise ProtocolError("info must be an object", rid, "bad_response")
    if status != STATUS_OK:
        err = obj.get("error") or {}
        if not isinstance(err, dict):
            raise ProtocolError("error must be an object", rid, "bad_response")
        return error_response(rid, str(err.get("type", status)), str(err.get("message", "")), status, info)
    score = validate_score(obj.get("score"), rid)
    raw_spans = obj.get("spans") or []
    if not isinstance(raw_spans, list):
        raise ProtocolError("spans must be a list", rid, "bad_response")
    spans = []
    for s in raw_spans:
        if not isinstance(s, dict):
            raise ProtocolError("each span must be an object", rid, "bad_response")
        label = s.get("label")
        spans.append(Span(s.get("start"), s.get("end"), s.get("reward"), None if label is None else str(label)))
    spans = validate_spans(spans, n_chars, rid)
    metrics = validate_metrics(obj.get("metrics") or {}, rid)
    return ScoreResponse(id=rid, status=STATUS_OK, score=score, spans=spans, metrics=metrics, info=clean_info(info))


def decode_message(line: str | bytes, n_chars: int | None = None) -> Message:
    """Parse one line a service wrote: hello, pong or a score response."""
    obj = _loads(line)
    op = obj.get("op")
    if op == "hello":
        check_version(obj, None)
        return Hello(
            service=str(obj.get("service", "")),
            version=str(obj.get("version", "")),
            capabilities=[str(c) for c in obj.get("capabilities") or []],
            max_inflight=int(obj.get("max_inflight") or 64),
        )
    if op == "pong":
        return Pong(id=obj.get("id"))
    return response_from_json(obj, n_chars)
