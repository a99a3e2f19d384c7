"""Spec-following checks for the react service (request option `spec: true`), pure functions.

The request's `reference.requirements` says what the component must contain:

    {"component": "MainCard",                      # exported under this name
     "props": [["title", "string"], ...],          # each declared with its type
     "state": "count",                             # const [count, setCount] = useState(...)
     "elements": [["h1", "{title}"], ["p", "Hello"], ["input", "value={text}"], ...],
     "list": "items"}                              # rendered with items.map(...)

Every key is optional. An element is (tag, content): the content must be the element's whole
text (`<p>Hello</p>`, `<h1>{title}</h1>`, spaces around it free), or, when it has the form
`attr={x}`, an attribute of the tag (`<input value={text} ... />`).

The checks compare the requirements with facts the Node checker read from the code's TypeScript
syntax tree (spec_facts.js; the code is never run): a name, prop, state, element or text inside a
comment or a string literal is no declaration and does not count. Each failed check puts one
negative span (with_spec says how much) on the construct that violates it, or, when the construct
is missing, on the line where it belongs (the component's declaration for the name, props and
state; its `return` line for elements and the list).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from botgrpo_rewards.backend import BackendError, ScoreResult
from botgrpo_rewards.protocol import Span
from botgrpo_rewards.react.extract import Utf16Map
from botgrpo_rewards.react.verdict import disjoint, line_end

CHECKS = ("component", "props", "state", "elements", "list")
_NAME = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*\Z")
_TAG = re.compile(r"[a-z][a-z0-9]*\Z")
_TYPE = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*(\[\])?\Z")


@dataclass(frozen=True)
class Requirements:
    component: str | None = None
    props: tuple[tuple[str, str], ...] = ()
    state: str | None = None
    elements: tuple[tuple[str, str], ...] = ()
    list: str | None = None

    @classmethod
    def parse(cls, raw: Any) -> "Requirements":
        """Validate `reference.requirements`; anything malformed is a bad request naming the field."""
        if not isinstance(raw, dict):
            raise _bad("reference.requirements must be an object (see the react service README)")
        unknown = sorted(set(raw) - set(CHECKS))
        if unknown:
            raise _bad(f"reference.requirements: unknown key(s) {unknown}; known: {list(CHECKS)}")
        return cls(
            component=_opt_name(raw, "component"),
            props=tuple(_pair(p, "props", _NAME, _TYPE) for p in _list(raw, "props")),
            state=_opt_name(raw, "state"),
            elements=tuple(_element(e) for e in _list(raw, "elements")),
            list=_opt_name(raw, "list"),
        )

    def n_checks(self) -> int:
        return (self.component is not None) + len(self.props) + (self.state is not None) + len(self.elements) \
            + (self.list is not None)


def _bad(message: str) -> BackendError:
    return BackendError(message, "bad_request")


def _opt_name(raw: dict, key: str) -> str | None:
    value = raw.get(key)
    if value is not None and not (isinstance(value, str) and _NAME.match(value)):
        raise _bad(f"reference.requirements.{key} must be an identifier, got {value!r}")
    return value


def _list(raw: dict, key: str) -> list:
    value = raw.get(key, [])
    if not isinstance(value, list):
        raise _bad(f"reference.requirements.{key} must be a list")
    return value


def _pair(item: Any, key: str, first: re.Pattern, second: re.Pattern) -> tuple[str, str]:
    if not (isinstance(item, list) and len(item) == 2 and all(isinstance(x, str) for x in item)
            and first.match(item[0]) and second.match(item[1])):
        raise _bad(f"reference.requirements.{key}: each entry must be a pair of names, got {item!r}")
    return item[0], item[1]


def _element(item: Any) -> tuple[str, str]:
    if not (isinstance(item, list) and len(item) == 2 and all(isinstance(x, str) for x in item)
            and _TAG.match(item[0]) and item[1].strip() and "<" not in item[1] and len(item[1]) <= 200):
        raise _bad(f"reference.requirements.elements: each entry must be [tag, content], got {item!r}")
    return item[0], item[1]


@dataclass(frozen=True)
class Violation:
    check: str  # one of CHECKS
    start: int  # code points of the code
    end: int
    message: str


@dataclass(frozen=True)
class Prop:
    name: str
    type: str  # normalised: `T[]` for every array spelling, else the type's text
    start: int  # code points of the code: the member from its name to the end of its type
    end: int
    broken: bool  # the parser repaired it: it shows where the prop is but does not declare it


@dataclass(frozen=True)
class Component:
    name: str | None  # None for an anonymous `export default function () {...}`
    name_span: tuple[int, int] | None
    start: int  # its statement
    exported_as: tuple[str, ...]  # the names it is exported under
    ret: int | None  # its first `return`


@dataclass(frozen=True)
class State:
    value: str
    setter: str
    start: int  # from `const` to the end of `useState`
    end: int
    broken: bool


@dataclass(frozen=True)
class Element:
    tag: str
    start: int
    end: int
    inner: tuple[int, int] | None  # the source between its tags; None when self-closing
    attrs: tuple[tuple[str, int | None, int | None], ...]  # (name, initializer start, end)
    broken: bool


@dataclass(frozen=True)
class SpecFacts:
    """What the syntax tree says (checker.js's `facts`, see spec_facts.js), in code points."""

    components: tuple[Component, ...] = ()
    target: int | None = None  # the component the spec describes (index in components)
    props: tuple[Prop, ...] = ()  # members of the target's props type
    states: tuple[State, ...] = ()
    elements: tuple[Element, ...] = ()
    maps: frozenset[str] = field(default_factory=frozenset)  # names with a `name.map(...)` call
    first_return: int | None = None

    @classmethod
    def from_node(cls, code: str, raw: dict[str, Any]) -> "SpecFacts":
        """The Node checker's facts for `code`, its UTF-16 offsets turned into code points."""
        cp = Utf16Map(code).to_cp
        opt = (lambda u: None if u is None else cp(u))  # noqa: E731
        comps = tuple(Component(
            c["name"], None if c["name"] is None else (cp(c["name_start"]), cp(c["name_end"])), cp(c["start"]),
            tuple(c["exported_as"]), opt(c["ret"])) for c in raw["components"])
        props = tuple(Prop(p["name"], p["type"], cp(p["start"]), cp(p["end"]), p["broken"]) for p in raw["props"])
        states = tuple(State(s["value"], s["setter"], cp(s["start"]), cp(s["end"]), s["broken"]) for s in raw["states"])
        elements = tuple(Element(
            e["tag"], cp(e["start"]), cp(e["end"]), None if e["inner"] is None else (cp(e["inner"][0]), cp(e["inner"][1])),
            tuple((name, opt(a), opt(b)) for name, a, b in e["attrs"]), e["broken"]) for e in raw["elements"])
        return cls(comps, raw["target"], props, states, elements, frozenset(raw["maps"]), opt(raw["first_return"]))


def check_spec(code: str, req: Requirements, facts: SpecFacts) -> list[Violation]:
    """Every failed check of `req` on `code` (whose syntax tree says `facts`), with where it is."""
    comps = facts.components
    home = _line(code, comps[0].start if comps else _first_line(code))  # the first component's line
    target = comps[facts.target] if facts.target is not None else None  # the one the spec describes
    ret = target.ret if target is not None and target.ret is not None else facts.first_return
    body = _line(code, ret) if ret is not None else home  # where elements belong
    out: list[Violation] = []
    if req.component is not None and not any(req.component in c.exported_as for c in comps):
        shown = next((c for c in comps if c.exported_as), target)
        where = (shown.name_span or _line(code, shown.start)) if shown is not None else home
        out.append(Violation("component", *where, f"component {req.component} is not exported under that name"))
    for name, type_ in req.props:
        if not any(m.name == name and m.type == type_ and not m.broken for m in facts.props):
            wrong = next((m for m in facts.props if m.name == name), None)
            where = (wrong.start, wrong.end) if wrong else home
            out.append(Violation("props", *where, f"prop {name} is not declared as {type_}"))
    if req.state is not None:
        setter = "set" + req.state[0].upper() + req.state[1:]
        if not any((s.value, s.setter) == (req.state, setter) and not s.broken for s in facts.states):
            where = (facts.states[0].start, facts.states[0].end) if facts.states else home
            out.append(Violation("state", *where, f"no state {req.state} with setter {setter} from useState"))
    for tag, content in req.elements:
        if not any(e.tag == tag and not e.broken and _holds(code, e, content) for e in facts.elements):
            out.append(Violation("elements", *_element_site(code, facts, tag, content, body), f"no <{tag}> with {content}"))
    if req.list is not None and req.list not in facts.maps:
        ul = next((e for e in facts.elements if e.tag in ("ul", "ol")), None)
        where = (ul.start, line_end(code, ul.start, len(code))) if ul else body
        out.append(Violation("list", *where, f"{req.list} is not rendered with {req.list}.map(...)"))
    return out


def _content_re(content: str) -> str:
    """A literal text, or {expr} with free spaces inside the braces."""
    brace = re.fullmatch(r"\{\s*(.*?)\s*\}", content)
    if brace:
        return r"\{\s*" + re.escape(brace.group(1)) + r"\s*\}"
    return re.escape(content)


_ATTR_CONTENT = re.compile(r"([A-Za-z][\w-]*)=(\{.*\})", re.DOTALL)


def _holds(code: str, e: Element, content: str) -> bool:
    """`e`'s whole text is `content` (spaces around it free), or `content` = `attr={x}` is one of its
    attributes."""
    attr = _ATTR_CONTENT.fullmatch(content)
    if attr:
        value = re.compile(_content_re(attr.group(2)))
        return any(name == attr.group(1) and a is not None and value.fullmatch(code, a, b) for name, a, b in e.attrs)
    # pos/endpos rather than a slice: nested elements' texts overlap, slicing each would be quadratic
    return e.inner is not None and re.compile(r"\s*" + _content_re(content) + r"\s*").fullmatch(code, *e.inner) is not None


def _element_site(code: str, facts: SpecFacts, tag: str, content: str, fallback: tuple[int, int]) -> tuple[int, int]:
    """The construct a missing element was most likely meant to be: the same content under another
    tag, else the first element with this tag, else the fallback line."""
    if not _ATTR_CONTENT.fullmatch(content):
        same_content = next((e for e in facts.elements if _holds(code, e, content)), None)
        if same_content:
            return same_content.start, same_content.end
    same_tag = next((e for e in facts.elements if e.tag == tag), None)
    if same_tag:
        return same_tag.start, line_end(code, same_tag.start, len(code))
    return fallback


def _first_line(code: str) -> int:
    stripped = len(code) - len(code.lstrip())
    return min(stripped, max(0, len(code) - 1))


def _line(code: str, pos: int) -> tuple[int, int]:
    """[pos without leading blanks, end of its line); at least one character when the code has one."""
    while pos < len(code) and code[pos] in " \t":
        pos += 1
    end = line_end(code, pos, len(code))
    return pos, max(end, min(pos + 1, len(code)))


def with_spec(result: ScoreResult, completion: str, code: str, offset: int, req: Requirements, facts: SpecFacts,
              types: bool, penalty: float) -> ScoreResult:
    """`result` (the syntax/types verdict) with the spec folded in (`facts`: the syntax tree's, of `code`).

    A positive score is multiplied by checks passed / checks (a no-attempt score stays as it is, so
    no attempt stays the worst outcome); each violation is a span of -`penalty` (the service passes
    its type_penalty, so spans stay bounded as the reward contract asks), trimmed so it never
    overlaps the verdict's penalty spans or another, and cut out of any positive (pass-credit) span;
    a no attempt gets no spans. Metrics: spec_ok, spec_checks, spec_failed, spec_<check>_failed per
    check, and all_ok = syntax_ok x types_ok (with types) x spec_ok.
    """
    found = check_spec(code, req, facts)
    n = req.n_checks()
    metrics = dict(result.metrics)
    metrics["spec_ok"] = float(not found)
    metrics["spec_checks"] = float(n)
    metrics["spec_failed"] = float(len(found))
    for check in CHECKS:
        metrics[f"spec_{check}_failed"] = float(sum(v.check == check for v in found))
    passed = metrics.get("syntax_ok", 0.0) * (metrics.get("types_ok", 0.0) if types else 1.0)
    metrics["all_ok"] = passed * metrics["spec_ok"]
    if result.score < 0:  # no attempt: nothing to mark
        return ScoreResult(result.score, list(result.spans), metrics, dict(result.info))
    negative = sorted((s.start, s.end) for s in result.spans if s.reward < 0)
    ranges = disjoint([(offset + v.start, offset + v.end, f"spec_{v.check}") for v in found])
    added = [Span(a, b, -penalty, label) for start, end, label in ranges for a, b in _outside(start, end, negative)]
    taken = sorted((s.start, s.end) for s in added)
    spans = [s for s in result.spans if s.reward < 0] + added
    spans += [Span(a, b, s.reward, s.label) for s in result.spans if s.reward >= 0 for a, b in _outside(s.start, s.end, taken)]
    spans.sort(key=lambda s: s.start)
    score = result.score * (n - len(found)) / n if n and result.score > 0 else result.score
    info = dict(result.info)
    if found and not info:
        first = found[0]
        pos = offset + first.start
        info = {"stage": "spec", "code": first.check, "message": first.message,
                "line": completion.count("\n", 0, pos) + 1, "column": pos - completion.rfind("\n", 0, pos)}
    return ScoreResult(score, spans, metrics, info)


def _outside(start: int, end: int, taken: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The pieces of [start, end) not covered by the sorted ranges `taken`."""
    pieces, pos = [], start
    for a, b in taken:
        if b <= pos or a >= end:
            continue
        if a > pos:
            pieces.append((pos, a))
        pos = max(pos, b)
    if pos < end:
        pieces.append((pos, end))
    return pieces
