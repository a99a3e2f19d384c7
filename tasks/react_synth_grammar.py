"""A seeded grammar of small TSX function components and the short specs that fix their content.

A `Spec` names everything the program must contain (component name, props and their types, the one
state variable, the child elements in order and their text), so a model cannot score by writing
less. `render(spec, faults)` writes the program; each fault in `faults` breaks one construct the way
people (and small models) typically do, always as a syntax error esbuild rejects.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

ADJECTIVES = ("Main", "User", "Side", "Top", "Quick", "Mini", "Info", "Task", "Note", "Shop")
NOUNS = ("Card", "Panel", "Menu", "Banner", "List", "Box", "Header", "Widget", "Badge", "View")
STRING_PROPS = ("title", "label", "heading", "caption")
NUMBER_PROPS = ("step", "amount")
LIST_PROPS = ("items", "tags", "names")
STATES = {  # type -> (names, initial value as TSX)
    "number": (("count", "clicks", "score", "total"), "0"),
    "boolean": (("open", "active", "shown", "done"), "false"),
    "string": (("text", "query", "note", "value"), '""'),
}
WORDS = ("Hello", "Welcome", "Save", "Show", "More", "Next", "Reset", "Clear", "Add", "Café",
         "Details", "Done", "Open", "Tips", "Menu", "Ready", "Go", "Back", "Über", "Start")
HEADINGS = ("h1", "h2", "h3")

# Children a spec may ask for, with what each needs from the props and state.
CHILD_KINDS = ("heading", "text", "show", "button", "list", "cond", "input")


@dataclass(frozen=True)
class Child:
    kind: str
    tag: str = ""  # heading tag
    text: str = ""  # literal text (text, button, cond)
    ref: str = ""  # the prop shown (heading, list)


@dataclass(frozen=True)
class Spec:
    name: str
    props: tuple[tuple[str, str], ...]  # (name, type) in declaration order
    state: tuple[str, str]  # (name, type)
    children: tuple[Child, ...]

    def prompt(self) -> str:
        """The instruction: every name, type, element and text the program must contain."""
        props = ", ".join(f"{n}: {t}" for n, t in self.props)
        state, stype = self.state
        lines = [f"Component {self.name}", f"props {props}", f"state {state}: {stype}", "renders:"]
        lines += [f"- {_describe(c, self)}" for c in self.children]
        return "\n".join(lines) + "\n"


def _setter(name: str, wrong: bool = False) -> str:
    return ("update" if wrong else "set") + name[0].upper() + name[1:]


def _other_name(name: str) -> str:
    """The same adjective with the next noun: the `name` site fault."""
    noun = next(n for n in NOUNS if name.endswith(n))
    return name[: -len(noun)] + NOUNS[(NOUNS.index(noun) + 1) % len(NOUNS)]


def _other_word(word: str) -> str:
    return WORDS[(WORDS.index(word) + 1) % len(WORDS)]


def _number_prop(spec: Spec) -> str | None:
    return next((n for n, t in spec.props if t == "number"), None)


def _describe(c: Child, spec: Spec) -> str:
    state, stype = spec.state
    if c.kind == "heading":
        return f"{c.tag} with {c.ref}"
    if c.kind == "text":
        return f'p "{c.text}"'
    if c.kind == "show":
        return f"span with {state}"
    if c.kind == "list":
        return f"ul of {c.ref}"
    if c.kind == "cond":
        return f'if {state}, p "{c.text}"'
    if c.kind == "input":
        return f"input bound to {state}"
    action = {"number": f"adds {_number_prop(spec) or 1} to", "boolean": "toggles", "string": "clears"}[stype]
    return f'button "{c.text}" {action} {state}'


def sample_spec(rng: random.Random) -> Spec:
    """Draw one consistent spec: children first, then the props and state they need."""
    stype = rng.choice(tuple(STATES))
    state = rng.choice(STATES[stype][0])
    allowed = [k for k in CHILD_KINDS if (k != "cond" or stype == "boolean") and (k != "input" or stype == "string")]
    kinds = rng.sample(allowed, rng.choice((2, 3)))
    props: list[tuple[str, str]] = []
    children = []
    for kind in kinds:
        if kind == "heading":
            ref = _add_prop(props, rng, STRING_PROPS, "string")
            children.append(Child(kind, tag=rng.choice(HEADINGS), ref=ref))
        elif kind == "list":
            children.append(Child(kind, ref=_add_prop(props, rng, LIST_PROPS, "string[]")))
        elif kind in ("text", "button", "cond"):
            children.append(Child(kind, text=rng.choice(WORDS)))
        else:
            children.append(Child(kind))
    if stype == "number" and "button" in kinds and rng.random() < 0.5:
        _add_prop(props, rng, NUMBER_PROPS, "number")
    if not props:
        _add_prop(props, rng, STRING_PROPS, "string")
    name = rng.choice(ADJECTIVES) + rng.choice(NOUNS)
    return Spec(name, tuple(props), (state, stype), tuple(children))


def _add_prop(props: list[tuple[str, str]], rng: random.Random, names: tuple[str, ...], type_: str) -> str:
    for name, t in props:
        if t == type_:
            return name  # one prop of each type keeps programs short
    name = rng.choice(names)
    props.append((name, type_))
    return name


# --------------------------------------------------------------------------------------------
# Rendering, with optional faults. Each fault names the construct it breaks.

FAULTS = {  # fault -> the construct it needs
    "li_unclosed": "list",  # <li ...>{item})} : the </li> is dropped
    "map_brace": "list",  # the map's closing } is dropped
    "handler_paren": "button",  # setX(x + 1}> : a ) is dropped in the handler
    "handler_brace": "button",  # setX(!x)> : the handler's } is dropped
    "tag_mismatch": "heading",  # <h1>..</h2>
    "state_comma": "state",  # const [x setX] = ...
    "props_comma": "props",  # ({ a b }: ...) with two props
}


def render(spec: Spec, faults: frozenset[str] = frozenset()) -> str:
    """The program for `spec` with the given faults applied (FAULTS break the syntax, SITE_FAULTS
    keep it valid and break the spec)."""
    state, stype = spec.state
    setter = _setter(state, "setter" in faults)
    names = (" " if "props_comma" in faults else ", ").join(n for n, _ in spec.props)
    types = "; ".join(f"{n}: {t}" for n, t in spec.props)
    sep = " " if "state_comma" in faults else ", "
    name = _other_name(spec.name) if "name" in faults else spec.name
    lines = [
        'import { useState } from "react";',
        f"export function {name}({{ {names} }}: {{ {types} }}) {{",
        f"  const [{state}{sep}{setter}] = useState({STATES[stype][1]});",
        "  return (",
        "    <div>",
    ]
    lines += [f"      {_child(c, spec, faults)}" for c in spec.children]
    lines += ["    </div>", "  );", "}"]
    return "\n".join(lines) + "\n"


def _child(c: Child, spec: Spec, faults: frozenset[str]) -> str:
    state, stype = spec.state
    setter = _setter(state, "setter" in faults)
    if "text" in faults and c == first_text_child(spec):
        c = Child(c.kind, c.tag, _other_word(c.text), c.ref)
    if c.kind == "heading":
        close = HEADINGS[(HEADINGS.index(c.tag) + 1) % 3] if "tag_mismatch" in faults else c.tag
        return f"<{c.tag}>{{{c.ref}}}</{close}>"
    if c.kind == "text":
        return f"<p>{c.text}</p>"
    if c.kind == "show":
        return f"<span>{{{state}}}</span>"
    if c.kind == "cond":
        return f"{{{state} && <p>{c.text}</p>}}"
    if c.kind == "input":
        return f"<input value={{{state}}} onChange={{(e) => {setter}(e.target.value)}} />"
    if c.kind == "list":
        if "list" in faults:
            return f'<ul>{{{c.ref}.join(", ")}}</ul>'
        li = "{item})" if "li_unclosed" in faults else "{item}</li>)"
        close = "" if "map_brace" in faults else "}"
        return f"<ul>{{{c.ref}.map((item) => <li key={{item}}>{li}{close}</ul>"
    arg = {"number": f"{state} + {_number_prop(spec) or 1}", "boolean": f"!{state}", "string": '""'}[stype]
    rparen = "" if "handler_paren" in faults else ")"
    rbrace = "" if "handler_brace" in faults else "}"
    return f"<button onClick={{() => {setter}({arg}{rparen}{rbrace}>{c.text}</button>"


def constructs(spec: Spec) -> set[str]:
    """The constructs of `spec` that faults can target."""
    found = {c.kind for c in spec.children} | {"state"}
    if len(spec.props) > 1:
        found.add("props")
    return found


def first_text_child(spec: Spec) -> Child | None:
    """The child whose literal text the `text` site fault changes."""
    return next((c for c in spec.children if c.kind in ("text", "button", "cond")), None)


def requirements(spec: Spec) -> dict:
    """What the react service's spec check (option spec) must find: rewards/react/spec.py."""
    state, _ = spec.state
    elements = []
    for c in spec.children:
        if c.kind == "heading":
            elements.append([c.tag, "{" + c.ref + "}"])
        elif c.kind in ("text", "cond"):
            elements.append(["p", c.text])
        elif c.kind == "button":
            elements.append(["button", c.text])
        elif c.kind == "show":
            elements.append(["span", "{" + state + "}"])
        elif c.kind == "input":
            elements.append(["input", "value={" + state + "}"])
    lists = [c.ref for c in spec.children if c.kind == "list"]
    out = {"component": spec.name, "props": [list(p) for p in spec.props], "state": state, "elements": elements}
    return out | ({"list": lists[0]} if lists else {})
