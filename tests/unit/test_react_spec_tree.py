"""The spec checks read the syntax tree, not the text (issue 27, part 5): each case is a pair of
twins, the true one declares the thing the spec asks for, the false one only writes it in a
comment or a string literal (or declares something else under that name), which regular
expressions over the text took for the real thing. Real Node (spec facts from spec_facts.js)."""

from __future__ import annotations

import time

import pytest

from botgrpo_rewards.react.spec import Requirements, check_spec

BASE = '''import { useState } from "react";
export function MainCard({ title, items }: { title: string; items: string[] }) {
  const [count, setCount] = useState(0);
  return (
    <div>
      <h1>{title}</h1>
      <button onClick={() => setCount(count + 1)}>Save</button>
      <ul>{items.map((item) => <li key={item}>{item}</li>)}</ul>
    </div>
  );
}
'''
REQ = Requirements.parse({"component": "MainCard", "props": [["title", "string"], ["items", "string[]"]],
                          "state": "count", "elements": [["h1", "{title}"], ["button", "Save"]], "list": "items"})


@pytest.fixture(scope="module")
def failed(react_backend):
    """failed(code) -> [(check, text of its span)] for REQ on the facts Node reads from `code`."""
    def run(code: str) -> list[tuple[str, str]]:
        facts = react_backend.spec_facts(code, time.monotonic() + 30, REQ.component)
        return [(v.check, code[v.start:v.end]) for v in check_spec(code, REQ, facts)]
    return run


def test_the_base_passes(failed):
    assert failed(BASE) == []


# (case, true twin's code, false twin's code, the check the false twin fails, its span's text)
TWINS = [
    ("name only in a comment",
     BASE.replace("export function MainCard", "export function MainCard"),
     BASE.replace("export function MainCard", "// export function MainCard\nexport function Panel"),
     "component", "Panel"),
    ("name only in a string",
     BASE + "export { MainCard as Card };\n",
     BASE.replace("export function MainCard", "export function Panel") + 'const doc = "export function MainCard";\n',
     "component", "Panel"),
    ("name exported, but not a component",
     BASE.replace("export function MainCard", "function Panel") + "export { Panel as MainCard };\n",
     BASE.replace("export function MainCard", "export function Panel") + "export const MainCard = 1;\n",
     "component", "Panel"),
    ("prop type only in a comment",
     BASE.replace("title: string;", "title: string /* the heading */;"),
     BASE.replace("title: string;", "title: number /* title: string */;"),
     "props", "title: number"),
    ("prop only in a string",
     BASE.replace("{ title: string; items: string[] }", "Props").replace("export function", "interface Props {\n  title: string;\n  items: string[];\n}\nexport function"),
     BASE.replace("title: string; ", "").replace("{ title, items }", "{ items }") + 'const help = "title: string";\n',
     "props", "export function MainCard({ items }: { items: string[] }) {"),
    ("prop declared on a type the component does not take",
     BASE.replace("{ title: string; items: string[] }", "Props & { items: string[] }").replace("export function", "type Props = { title: string };\nexport function"),
     BASE.replace("title: string; ", "").replace("{ title, items }", "{ items }").replace("export function", "interface Unused {\n  title: string;\n}\nexport function"),
     "props", "export function MainCard({ items }: { items: string[] }) {"),
    ("prop inherited through extends, or only on an unrelated interface",
     BASE.replace("{ title: string; items: string[] }", "Props").replace("export function", "interface Base {\n  title: string;\n}\ninterface Props extends Base {\n  items: string[];\n}\nexport function"),
     BASE.replace("{ title: string; items: string[] }", "Props").replace("export function", "interface Base {\n  title: string;\n}\ninterface Props {\n  items: string[];\n}\nexport function"),
     "props", "export function MainCard({ title, items }: Props) {"),
    ("prop type with more than the asked type",
     BASE.replace("title: string;", "title?: string;"),
     BASE.replace("title: string;", "title: string | number;"),
     "props", "title: string | number"),
    ("state only in a comment",
     BASE.replace("const [count, setCount] = useState(0);", "const [count, setCount] = useState<number>(0); // the clicks"),
     BASE.replace("const [count, setCount] = useState(0);", "// const [count, setCount] = useState(0);\n  let count = 0;\n  const setCount = (n: number) => { count = n; };"),
     "state", "export function MainCard({ title, items }: { title: string; items: string[] }) {"),
    ("state only in a template string",
     BASE.replace("const [count, setCount] = useState(0);", "const [count, setCount] = React.useState(0);").replace('import { useState } from "react";', 'import React from "react";'),
     BASE.replace("const [count, setCount] = useState(0);", "const [clicks, setClicks] = useState(0);\n  const note = `const [count, setCount] = useState(0)`;").replace("count + 1", "clicks + 1"),
     "state", "const [clicks, setClicks] = useState"),
    ("element only in a string",
     BASE.replace("<h1>{title}</h1>", '<h1 className="big">{ title }</h1>'),
     BASE.replace("<h1>{title}</h1>", "<h2>{title}</h2>") + 'const html = "<h1>{title}</h1>";\n',
     "elements", "<h2>{title}</h2>"),
    ("element only in a JSX comment",
     BASE.replace("<h1>{title}</h1>", "{/* the heading */}<h1>{title}</h1>"),
     BASE.replace("<h1>{title}</h1>", "{/* <h1>{title}</h1> */}"),
     "elements", "return ("),
    ("text only inside an attribute string",
     BASE.replace(">Save</button>", ">\n        Save\n      </button>"),
     BASE.replace(">Save</button>", ' title="<button>Save</button>">Done</button>'),
     "elements", '<button onClick={() => setCount(count + 1)} title="<button>Save</button>">Done</button>'),
    ("list only in a comment",
     BASE.replace("{items.map((item) =>", "{/* one row each */ items.map((item) =>"),
     BASE.replace("{items.map((item) => <li key={item}>{item}</li>)}", '{/* items.map(row) */ items.join(", ")}'),
     "list", '<ul>{/* items.map(row) */ items.join(", ")}</ul>'),
    ("list only in a string",
     BASE.replace("{items.map((item) =>", "{items\n        .map((item) =>"),
     BASE.replace("{items.map((item) => <li key={item}>{item}</li>)}", "{String('items.map(x)')}"),
     "list", "<ul>{String('items.map(x)')}</ul>"),
]


@pytest.mark.parametrize("case,true_twin,false_twin,check,where", TWINS, ids=[t[0] for t in TWINS])
def test_only_the_syntax_tree_counts(failed, case, true_twin, false_twin, check, where):
    assert failed(true_twin) == [], case
    assert failed(false_twin) == [(check, where)], case


def test_a_syntax_error_keeps_the_spec_checked_on_the_recovered_tree(failed):
    """The spec runs whatever the syntax stage says (its spans sit beside the syntax span): the
    parser's recovered tree still holds the declarations before and after the error."""
    broken = BASE.replace("</div>", "</dvi>")
    assert failed(broken) == []
    assert failed(broken.replace("function MainCard", "function Other")) == [("component", "Other")]


def test_the_facts_do_not_depend_on_the_stage_or_the_batch(react_backend):
    """Type-checked code gets its facts from its slot in the batch's program, other code from a parse
    of its own: the same text gives the same facts either way."""
    checker = react_backend._checker
    for code in [BASE, TWINS[4][1], TWINS[8][2], BASE.replace("</div>", "</dvi>")]:
        typed = checker.check(code, True, 5, time.monotonic() + 30, spec=True)["facts"]
        assert typed == checker.check(code, False, 5, time.monotonic() + 30, spec=True)["facts"]


def test_absurd_nesting_is_an_error_answer_and_node_goes_on(react_backend):
    from botgrpo_rewards.backend import BackendError
    from botgrpo_rewards.protocol import ScoreRequest

    unclosed = "export function Deep() {\n  return " + "<div>" * 10_000 + ";\n}\n"
    request = ScoreRequest(id="deep", completion=unclosed, reference={"requirements": {"component": "Deep"}},
                           options={"spec": True})
    with pytest.raises(BackendError, match="too deep"):
        react_backend.score(request, time.monotonic() + 30)
    assert react_backend.spec_facts(BASE, time.monotonic() + 30).components[0].name == "MainCard"


def test_props_types_are_read_once_each(react_backend):
    """A diamond of interfaces 40 levels deep (2^40 paths) and a cycle are read in linear time."""
    chain = "interface I0 { title: string; items: string[] }\ninterface J0 { other: number }\n"
    chain += "".join(f"interface I{k} extends I{k - 1}, J{k - 1} {{}}\ninterface J{k} extends I{k - 1}, J{k - 1} {{}}\n"
                     for k in range(1, 41))
    chain += "interface C1 extends C2 { a: string }\ninterface C2 extends C1 { b: string }\n"
    code = BASE.replace("{ title: string; items: string[] }", "I40 & C1").replace("export function", chain + "export function")
    facts = react_backend.spec_facts(code, time.monotonic() + 30, "MainCard")
    assert sorted(p.name for p in facts.props) == ["a", "b", "items", "other", "title"]
    assert check_spec(code, REQ, facts) == []


@pytest.mark.parametrize("before,after,check,where", [
    ("const [count, setCount]", "const [count setCount]", "state", "const [count setCount] = useState"),
    ("<h1>{title}</h1>", "<h1>{title}</h2>", "elements", "<h1>{title}</h2>"),
    ("title: string;", "title: string string;", "props", "title: string"),
])
def test_a_construct_the_parser_had_to_repair_does_not_count(failed, before, after, check, where):
    """Its syntax error is penalised by the syntax stage; the spec does not credit it either (the
    clean twin is the base, which passes)."""
    assert (check, where) in failed(BASE.replace(before, after))
