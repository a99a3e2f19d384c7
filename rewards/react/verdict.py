"""Turn the Node checker's findings into a score, spans, metrics and info (pure functions)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from botgrpo_rewards.backend import BackendError, ScoreResult, check_option_names
from botgrpo_rewards.contract import Outcome, bool_option, check_order, number_option
from botgrpo_rewards.protocol import Span
from botgrpo_rewards.react.extract import Utf16Map

_LINE_BREAKS = "\n\r\u2028\u2029"
_IDENT = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_$")


@dataclass(frozen=True)
class ReactOptions:
    """Request options of the react service (all optional; README.md has the reward contract)."""

    types: bool = True  # run the type stage; false = syntax only
    max_type_errors: int = 5  # K: at most this many type-error spans
    syntax_weight: float = 0.5  # score share for passing syntax
    types_weight: float = 0.5  # score share for passing types (added to syntax_weight)
    missing_score: float = -1.0  # score of a completion without a component (empty, prose, refusal)
    syntax_penalty: float = 0.5  # minus this on the first syntax error's line
    type_penalty: float = 0.25  # minus this on each type diagnostic (at most max_type_errors)
    pass_credit: float = 0.0  # plus this over the code that passed the syntax stage (outside error spans)

    @classmethod
    def parse(cls, options: dict[str, Any]) -> "ReactOptions":
        """Validate request options; an unknown or ill-typed one, or numbers that break the reward
        order, is a bad request."""
        check_option_names("react", options, tuple(cls.__dataclass_fields__))
        k = options.get("max_type_errors", cls.max_type_errors)
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= 1000:
            raise BackendError("option 'max_type_errors' must be an integer from 1 to 1000", "bad_request")
        numbers = {name: number_option(options, name, getattr(cls, name), 0.0, 1.0)
                   for name in ("syntax_weight", "types_weight", "syntax_penalty", "type_penalty", "pass_credit")}
        opts = cls(types=bool_option(options, "types", cls.types), max_type_errors=k,
                   missing_score=number_option(options, "missing_score", cls.missing_score, -1.0, 0.0), **numbers)
        if opts.syntax_weight + opts.types_weight > 1:
            raise BackendError("options 'syntax_weight' + 'types_weight' must not exceed 1", "bad_request")
        check_order("react", opts.outcomes())
        return opts

    def outcomes(self) -> list[Outcome]:
        """The outcomes, best first, with the score and span rewards each can earn."""
        full = self.syntax_weight + self.types_weight
        passed = [Outcome("syntax and types pass", (full, full), (0.0, self.pass_credit))]
        if self.types:
            passed = [passed[0], Outcome("syntax passes, types fail", (self.syntax_weight, self.syntax_weight),
                                         (-self.type_penalty, self.pass_credit))]
        return passed + [Outcome("syntax error", (0.0, 0.0), (-self.syntax_penalty, 0.0)),
                         Outcome("no component", (self.missing_score, self.missing_score))]


def line_end(text: str, pos: int, limit: int) -> int:
    """Index of the first line break at or after `pos` (or `limit`)."""
    end = pos
    while end < limit and text[end] not in _LINE_BREAKS:
        end += 1
    return end


def syntax_span(text: str, pos: int, lo: int, hi: int) -> tuple[int, int]:
    """[pos, end of its line) within the code [lo, hi). An error at a line end or at the end of the
    file covers the last non-blank line before it instead (leading whitespace trimmed)."""
    pos = min(max(pos, lo), hi)
    end = line_end(text, pos, hi)
    if text[pos:end].strip():
        return pos, end
    last = pos - 1
    while last >= lo and text[last].isspace():
        last -= 1
    if last < lo:  # nothing but whitespace before: cover the first character there is
        return pos, min(pos + 1, len(text))
    start = last
    while start > lo and text[start - 1] not in _LINE_BREAKS:
        start -= 1
    while text[start].isspace():
        start += 1
    return start, last + 1


def diagnostic_range(text: str, start: int, end: int, hi: int) -> tuple[int, int]:
    """A type diagnostic's range; a zero-length one covers the identifier at that point (or one char)."""
    if end > start:
        return start, end
    end = start
    while end < hi and text[end] in _IDENT:
        end += 1
    return (start, end) if end > start else (start, min(start + 1, hi))


def disjoint(ranges: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """Sort by start, keep the first range per start, trim each to begin after the previous one."""
    out: list[tuple[int, int, str]] = []
    for start, end, label in sorted(ranges, key=lambda r: (r[0], -r[1])):
        if out and start == out[-1][0]:
            continue
        if out and start < out[-1][1]:
            start = out[-1][1]
        if end > start:
            out.append((start, end, label))
    return out


def _location(text: str, pos: int) -> tuple[int, int]:
    """1-based line and column (code points) of `pos` in the completion."""
    line_start = text.rfind("\n", 0, pos) + 1
    return text.count("\n", 0, pos) + 1, pos - line_start + 1


def _info(completion: str, pos: int, code: str, message: str, stage: str) -> dict[str, Any]:
    line, column = _location(completion, pos)
    return {"stage": stage, "code": code, "message": message, "line": line, "column": column}


def _failed_metrics(opts: ReactOptions, n_errors: float) -> dict[str, float]:
    return {"syntax_ok": 0.0, "n_errors": n_errors} | ({"types_ok": 0.0, "compile": 0.0} if opts.types else {})


def truncated_reasoning(opts: ReactOptions) -> ScoreResult:
    """A reasoning cut off before its close tag: no code was written (no attempt: `missing_score`),
    nothing to mark inside it."""
    info = {"stage": "reasoning", "code": "reasoning_truncated",
            "message": "the reasoning never closed (cut off by the length limit?), so there is no answer to check"}
    return ScoreResult(score=opts.missing_score, spans=[], metrics=_failed_metrics(opts, 0.0), info=info)


def verdict(completion: str, code: str, offset: int, found: dict[str, Any], opts: ReactOptions) -> ScoreResult:
    """Score one check: `found` is the Node checker's reply for `code`, found at `offset` in `completion`."""
    if not found["component"]:
        info = {"stage": "component", "code": "no_component",
                "message": "no React component found: expected a top-level capitalised function component (or "
                           "an export default function) and JSX"}
        return ScoreResult(score=opts.missing_score, spans=[], metrics=_failed_metrics(opts, 0.0), info=info)
    pos16 = Utf16Map(code)
    lo, hi = offset, offset + len(code)
    syntax = found["syntax"]
    if syntax is not None:
        start, end = syntax_span(completion, offset + pos16.to_cp(syntax["start"]), lo, hi)
        return ScoreResult(0.0, [Span(start, end, -opts.syntax_penalty, "syntax")], _failed_metrics(opts, 1.0),
                           _info(completion, start, "syntax", syntax["message"], "syntax"))
    if not opts.types:
        spans = _credited(completion, [], lo, hi, opts.pass_credit)
        return ScoreResult(opts.syntax_weight + opts.types_weight, spans, {"syntax_ok": 1.0, "n_errors": 0.0}, {})
    ranges = []
    for d in found["types"][: opts.max_type_errors]:
        start = offset + pos16.to_cp(d["start"])
        end = offset + pos16.to_cp(d["start"] + d["length"])
        ranges.append((*diagnostic_range(completion, start, end, hi), d["code"]))
    errors = [Span(s, e, -opts.type_penalty, label) for s, e, label in disjoint(ranges)]
    n_errors = int(found["n_type_errors"])
    types_ok = n_errors == 0
    score = opts.syntax_weight + (opts.types_weight if types_ok else 0.0)
    info = {} if types_ok else _info(completion, offset + pos16.to_cp(found["types"][0]["start"]),
                                     found["types"][0]["code"], found["types"][0]["message"], "types")
    # compile: parses and type-checks (the paper's compile rate); absent with types off, as types_ok is
    metrics = {"syntax_ok": 1.0, "types_ok": float(types_ok), "compile": float(types_ok), "n_errors": float(n_errors)}
    return ScoreResult(score, _credited(completion, errors, lo, hi, opts.pass_credit), metrics, info)


def _credited(text: str, errors: list[Span], lo: int, hi: int, credit: float) -> list[Span]:
    """The error spans plus +credit over the rest of the code [lo, hi) (blank ends trimmed): the
    code that passed the syntax stage earns more than prose around it."""
    if credit <= 0:
        return errors
    out, pos = [], lo
    for span in errors + [Span(hi, hi, 0.0)]:
        a, b = pos, span.start
        while a < b and text[a].isspace():
            a += 1
        while b > a and text[b - 1].isspace():
            b -= 1
        if a < b:
            out.append(Span(a, b, credit, "pass"))
        if span.end > span.start:
            out.append(span)
        pos = span.end
    return out
