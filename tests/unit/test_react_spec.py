"""The react service's spec checks (rewards/react/spec.py) on the facts the real Node checker reads
from the syntax tree: what passes, what fails, and where each violation's span lands. The whole
service is in tests/integration/test_react_spec_service.py; hostile twins (a name, prop, element
or text only in a comment or a string) in tests/unit/test_react_spec_tree.py."""

import time

import pytest

from botgrpo_rewards.backend import BackendError, ScoreResult
from botgrpo_rewards.protocol import Span
from botgrpo_rewards.react.spec import Requirements, SpecFacts, check_spec, with_spec
from botgrpo_tasks import get_task
from botgrpo_tasks.react_synth import SITES
from botgrpo_tasks.react_synth_grammar import render, requirements

CODE = '''import { useState } from "react";
export function MainCard({ title, items }: { title: string; items: string[] }) {
  const [count, setCount] = useState(0);
  return (
    <div>
      <h1>{ title }</h1>
      <button onClick={() => setCount(count + 1)}>Save</button>
      <ul>{items.map((item) => <li key={item}>{item}</li>)}</ul>
    </div>
  );
}
'''
REQ = Requirements.parse({"component": "MainCard", "props": [["title", "string"], ["items", "string[]"]],
                          "state": "count", "elements": [["h1", "{title}"], ["button", "Save"]], "list": "items"})


@pytest.fixture(scope="module")
def spec_of(react_backend):
    """spec_of(code, req) -> check_spec's violations, on the facts Node reads from `code`."""
    def run(code, req):
        return check_spec(code, req, react_backend.spec_facts(code, time.monotonic() + 30, req.component))
    return run


@pytest.fixture(scope="module")
def violations(spec_of):
    return lambda code, req=REQ: [(v.check, code[v.start:v.end]) for v in spec_of(code, req)]


def test_the_reference_shape_passes(violations):
    assert violations(CODE) == []


@pytest.mark.parametrize("before,after,check,where", [
    ("export function MainCard", "export function MainPanel", "component", "MainPanel"),
    ("export function MainCard", "function MainCard", "component", "MainCard"),
    ("title: string;", "title: number;", "props", "title: number"),
    ("; items: string[] }", " }", "props", "export function MainCard({ title, items }: { title: string }) {"),
    ("const [count, setCount]", "const [count, updateCount]", "state", "const [count, updateCount] = useState"),
    ("<h1>{ title }</h1>", "<h2>{ title }</h2>", "elements", "<h2>{ title }</h2>"),
    (">Save</button>", ">Done</button>", "elements", "<button onClick={() => setCount(count + 1)}>Done</button>"),
    ("{items.map((item) => <li key={item}>{item}</li>)}", '{items.join(", ")}', "list", '<ul>{items.join(", ")}</ul>'),
])
def test_each_violation_fails_one_check_with_a_span_on_its_construct(before, after, check, where, violations):
    code = CODE.replace(before, after)
    assert code != CODE
    assert violations(code) == [(check, where)]


def test_missing_elements_point_at_the_return_line(violations):
    code = CODE.replace("      <button onClick={() => setCount(count + 1)}>Save</button>\n", "")
    assert violations(code) == [("elements", "return (")]


def test_other_spellings_are_accepted(violations):
    code = (CODE.replace("export function MainCard(", "const MainCard = (").replace(") {\n  const", ") => {\n  const")
            .replace("title: string; items: string[]", "title?: string; items: Array<string>")
            + "export default MainCard;\n")
    assert violations(code) == []
    code2 = CODE.replace("<button onClick", '<button type="button" onClick').replace("(0)", "<number>(0)")
    assert violations(code2) == []


def test_score_spans_and_metrics_fold_into_the_verdict(react_backend):
    code = CODE.replace("MainCard", "MainPanel").replace('.map((item) => <li key={item}>{item}</li>)', '.join(", ")')
    completion = "```tsx\n" + code + "```"
    offset = completion.index(code)
    type_span = Span(offset + code.index("MainPanel"), offset + code.index("MainPanel") + 4, -1.0, "TS2322")
    base = ScoreResult(1.0, [type_span], {"syntax_ok": 1.0, "types_ok": 1.0, "n_errors": 0.0}, {})
    facts = react_backend.spec_facts(code, time.monotonic() + 30, REQ.component)
    got = with_spec(base, completion, code, offset, REQ, facts, types=True, penalty=0.25)
    assert got.score == pytest.approx(5 / 7)  # 7 checks, 2 failed
    assert got.metrics["spec_ok"] == 0.0 and got.metrics["all_ok"] == 0.0
    assert (got.metrics["spec_checks"], got.metrics["spec_failed"]) == (7.0, 2.0)
    assert (got.metrics["spec_component_failed"], got.metrics["spec_list_failed"]) == (1.0, 1.0)
    texts = [(completion[s.start:s.end], s.label) for s in got.spans]
    assert [s.reward for s in got.spans] == [-1.0, -0.25, -0.25]  # spec spans are bounded by the penalty
    # the spec span on the name is trimmed to what the type span left of it
    assert texts == [("Main", "TS2322"), ("Panel", "spec_component"), ('<ul>{items.join(", ")}</ul>', "spec_list")]
    assert got.info["stage"] == "spec" and got.info["line"] == 3
    clean = with_spec(ScoreResult(1.0, [], {"syntax_ok": 1.0, "types_ok": 1.0}, {}), CODE, CODE, 0, REQ,
                      react_backend.spec_facts(CODE, time.monotonic() + 30, REQ.component), True, 0.25)
    assert (clean.score, clean.metrics["all_ok"], clean.spans) == (1.0, 1.0, [])


def test_no_attempt_stays_the_worst_and_pass_credit_is_cut_where_the_spec_fails(react_backend):
    empty = with_spec(ScoreResult(-1.0, [], {"syntax_ok": 0.0, "types_ok": 0.0}, {"stage": "component"}),
                      "no code", "no code", 0, REQ, SpecFacts(), True, 0.25)
    assert (empty.score, empty.spans, empty.metrics["spec_failed"]) == (-1.0, [], 7.0)
    code = CODE.replace('<ul>{items.map((item) => <li key={item}>{item}</li>)}</ul>', "<ul></ul>")
    credit = ScoreResult(1.0, [Span(0, len(code), 0.1, "pass")], {"syntax_ok": 1.0, "types_ok": 1.0}, {})
    facts = react_backend.spec_facts(code, time.monotonic() + 30, REQ.component)
    got = with_spec(credit, code, code, 0, REQ, facts, True, 0.25)
    ul = code.index("<ul>")
    assert [(s.start, s.end, s.reward) for s in got.spans] == [
        (0, ul, 0.1), (ul, code.index("\n", ul), -0.25), (code.index("\n", ul), len(code), 0.1)]
    assert got.score == pytest.approx(6 / 7)


@pytest.mark.parametrize("raw,message", [
    (None, "must be an object"),
    ({"colour": "red"}, "unknown key"),
    ({"component": "Main Card"}, "must be an identifier"),
    ({"props": [["title"]]}, "pair of names"),
    ({"elements": [["h1", "<script>"]]}, r"\[tag, content\]"),
])
def test_malformed_requirements_are_bad_requests(raw, message):
    with pytest.raises(BackendError, match=message) as err:
        Requirements.parse(raw)
    assert err.value.type == "bad_request"


@pytest.mark.parametrize("sites", [0, 2, 4])
def test_react_synth_references_pass_and_site_faults_fail_their_check(sites, spec_of):
    task = get_task("react_synth", sites=sites, n_eval=60)
    for ex in task.eval_examples():
        req = Requirements.parse(ex.reference["requirements"])
        assert spec_of(ex.reference["reference_code"], req) == [], ex.prompt
    for item in task.corpus_items(80) if sites else []:  # (syntax faults such as <h1>..</h2> may fail one too)
        got = sorted(v.check for v in spec_of(item.completion, Requirements.parse(requirements(item.spec))))
        want = {"name": "component", "setter": "state", "text": "elements", "list": "list"}
        assert got == sorted(want[f] for f in item.faults if f in want)
    if sites:
        assert all(f in SITES[:sites] for it in task.corpus_items(80) for f in it.faults)


def test_react_task_references_hold_their_requirements(spec_of):
    task = get_task("react")
    examples = task.train_examples() + task.eval_examples()
    assert sum(len(e.reference["requirements"]["props"]) for e in examples) > 40
    for ex in examples:
        assert spec_of(ex.reference["reference_code"], Requirements.parse(ex.reference["requirements"])) == []


def test_sites_option_is_checked():
    with pytest.raises(ValueError, match="sites must be an integer from 0 to 4"):
        get_task("react_synth", sites=7)
    with pytest.raises(ValueError, match="site_rate must be a number in"):
        get_task("react_synth", sites=1, site_rate=2)
