"""The react backend on a table of completions, checked by the real Node process (esbuild + tsc)."""

from __future__ import annotations

import os
import signal
import time

import pytest

from botgrpo_rewards.backend import BackendError, BackendTimeout
from botgrpo_rewards.protocol import ScoreRequest
from botgrpo_rewards.react.checker import MAX_BATCH
from botgrpo_rewards.react.service import ReactBackend

F = "```"


def fenced(code: str, lang: str = "tsx", before: str = "Here is the component:\n\n", after: str = "\n") -> str:
    return f"{before}{F}{lang}\n{code}{F}{after}"


COUNTER = """import { useState } from 'react';

export function Counter() {
  const [count, setCount] = useState(0);
  return <button onClick={() => setCount(count + 1)}>Clicked {count} times</button>;
}
"""
GREETING = """interface GreetingProps {
  name: string;
  excited?: boolean;
}

export function Greeting({ name, excited = false }: GreetingProps) {
  return <h1>Hello, {name}{excited ? '!' : '.'}</h1>;
}
"""


def with_use(extra: str) -> str:
    """GREETING plus a component that renders it with `extra` as its body line."""
    return GREETING + f"\nexport default function App() {{\n{extra}\n}}\n"


# (name, completion, syntax_ok, types_ok, text on the first error's line, text the first span starts with)
VALID = [
    ("counter", fenced(COUNTER), 1, 1, None, None),
    ("typed props", fenced(GREETING), 1, 1, None, None),
    ("arrow default export", fenced("const Card = () => <div className=\"card\">Card</div>;\nexport default Card;\n"), 1, 1, None, None),
    ("list with keys", fenced("const items = ['a', 'b'];\nexport function List() {\n  return <ul>{items.map((s) => <li key={s}>{s}</li>)}</ul>;\n}\n"), 1, 1, None, None),
    ("bare code", COUNTER, 1, 1, None, None),
    ("prose around", fenced(COUNTER, before="Sure! This counter keeps state:\n\n", after="\nIt re-renders on click.\n"), 1, 1, None, None),
    ("jsx block", fenced("export default function App() {\n  return <h1>Hi</h1>;\n}\n", lang="jsx"), 1, 1, None, None),
    ("typescript tag", fenced(GREETING, lang="typescript"), 1, 1, None, None),
    ("non-ascii prose", fenced(COUNTER, before="Voilà — le composant ✨ 😀 𝒳:\n"), 1, 1, None, None),
    ("emoji in jsx", fenced("export function Party() {\n  return <p>🎉 Félicitations 😀 {'𝄞'}</p>;\n}\n"), 1, 1, None, None),
    ("memo wrapped", fenced("import { memo } from 'react';\nexport const Row = memo(function Row(p: { n: number }) {\n  return <tr><td>{p.n}</td></tr>;\n});\n"), 1, 1, None, None),
    ("class component", fenced("import React from 'react';\nexport class Clock extends React.Component<{}, { t: number }> {\n  state = { t: 0 };\n  render() {\n    return <span>{this.state.t}</span>;\n  }\n}\n"), 1, 1, None, None),
    ("effect and fragment", fenced("import { useEffect, useState } from 'react';\nexport function Title() {\n  const [t, setT] = useState('');\n  useEffect(() => { document.title = t; }, [t]);\n  return <><input value={t} onChange={(e) => setT(e.target.value)} /></>;\n}\n"), 1, 1, None, None),
    ("unclosed fence", f"{F}tsx\n{COUNTER}", 1, 1, None, None),
    ("react-dom client", fenced("import { createRoot } from 'react-dom/client';\nfunction App() {\n  return <main>ok</main>;\n}\ncreateRoot(document.getElementById('root')!).render(<App />);\n"), 1, 1, None, None),
    ("lone surrogate in string", fenced("export function S() {\n  const s = '\ud800x\udfff';\n  return <b>{s}</b>;\n}\n"), 1, 1, None, None),
]

SYNTAX = [
    ("unclosed tag at eof", fenced("export function App() {\n  return <div>\n    <p>hi</p>\n", after=""), 0, 0, "return <div>", "div"),
    ("unclosed tag before brace", fenced("export function App() {\n  return <section>\n    <p>hi</p>\n  ;\n}\n"), 0, 0, "}", "}"),
    ("mismatched tag", fenced("export function App() {\n  return <div>hello</span>;\n}\n"), 0, 0, "hello</span>", "span"),
    ("missing closing brace", fenced("export function App() {\n  const x = 1;\n  return <div>{x}</div>;\n"), 0, 0, "return <div>{x}</div>;", "return"),
    ("missing paren", fenced("export function App() {\n  return (<div>ok</div>;\n}\n"), 0, 0, "return (<div>", ";"),
    ("bad arrow", fenced("const App = () = > <div>hi</div>;\nexport default App;\n"), 0, 0, "const App", "="),
    ("stray paren", fenced("export function App() {\n  const n = 2);\n  return <i>{n}</i>;\n}\n"), 0, 0, "const n = 2);", ")"),
    ("unclosed if paren", fenced("export function App(p: { x: boolean }) {\n  if (p.x {\n    return null;\n  }\n  return <div />;\n}\n"), 0, 0, "if (p.x {", "{"),
    ("unterminated string", fenced("export function App() {\n  const s = 'abc;\n  return <div>{s}</div>;\n}\n"), 0, 0, "const s = 'abc;", "const s"),
    ("empty attribute", fenced("export function App() {\n  return <div className=>x</div>;\n}\n"), 0, 0, "className=>", ">"),
    ("statement in jsx braces", fenced("export function App(p: { x: number }) {\n  return <div>{if (p.x) 1}</div>;\n}\n"), 0, 0, "{if (p.x) 1}", "if"),
    ("error after emoji", fenced("export function App() {\n  const s = '😀😀'; const = 5;\n  return <div>{s}</div>;\n}\n", before="Ça marche 🚀🚀:\n"), 0, 0, "const = 5;", "= 5;"),
    ("prose without fence", "Sure, here it is:\nexport function App() {\n  return <div />;\n}\n", 0, 0, "Sure, here it is:", "it is:"),
    ("stray keyword", fenced("export function App() {\n  return return <div />;\n}\n"), 0, 0, "return return", "return <div"),
]

TYPES = [
    ("wrong prop type", fenced(with_use("  return <Greeting name={42} />;")), 1, 0, "name={42}", "name"),
    ("missing prop", fenced(with_use("  return <Greeting excited />;")), 1, 0, "<Greeting excited", "Greeting"),
    ("unknown identifier", fenced("export function App() {\n  return <div>{count}</div>;\n}\n"), 1, 0, "{count}", "count"),
    ("setter with wrong type", fenced("import { useState } from 'react';\nexport function App() {\n  const [n, setN] = useState(0);\n  return <button onClick={() => setN('one')}>{n}</button>;\n}\n"), 1, 0, "setN('one')", "'one'"),
    ("calling a number", fenced("export function App() {\n  const n = 5;\n  return <div>{n()}</div>;\n}\n"), 1, 0, "{n()}", "n"),
    ("unknown import", fenced("import axios from 'axios';\nexport function App() {\n  return <div>{String(axios)}</div>;\n}\n"), 1, 0, "import axios", "'axios'"),
    ("installed but banned import", fenced("import * as ts from 'typescript';\nexport function App() {\n  return <div>{ts.version}</div>;\n}\n"), 1, 0, "import * as ts", "'typescript'"),
    ("wrong return type", fenced("export function App(): number {\n  return <div />;\n}\n"), 1, 0, "return <div />;", "return"),
    ("implicit any in jsx block", fenced("export default function App(props) {\n  return <h1>{props.title}</h1>;\n}\n", lang="jsx"), 1, 0, "App(props)", "props"),
    ("type error after emoji", fenced("export function App() {\n  const s = '😀𝄞'; const n: number = s;\n  return <div>{n}</div>;\n}\n", before="😀 ok:\n"), 1, 0, "const n: number", "n"),
    ("handler not a function", fenced("export function App() {\n  return <button onClick={5}>x</button>;\n}\n"), 1, 0, "onClick={5}", "onClick"),
    ("misspelt property", fenced("export function App(props: { name: string }) {\n  return <p>{props.nme}</p>;\n}\n"), 1, 0, "props.nme", "nme"),
]

MISSING = [
    ("empty", "", 0, 0, None, None),
    ("prose only", "I am sorry, but I cannot write that component for you.", 0, 0, None, None),
    ("no jsx", fenced("export function add(a: number, b: number) {\n  return a + b;\n}\n"), 0, 0, None, None),
    ("helper only", fenced("function helper() {\n  return <div />;\n}\n"), 0, 0, None, None),
    ("empty fence", fenced(""), 0, 0, None, None),
]

TABLE = VALID + SYNTAX + TYPES + MISSING


def score(backend: ReactBackend, completion: str, **options):
    return backend.score(ScoreRequest(id="t", completion=completion, options=options), time.monotonic() + 30)


def _line_bounds(text: str, needle: str) -> tuple[int, int]:
    at = text.index(needle)
    start = text.rfind("\n", 0, at) + 1
    end = text.find("\n", at)
    return start, len(text) if end < 0 else end


def test_table_is_big_enough():
    assert len(TABLE) >= 40 and len({row[0] for row in TABLE}) == len(TABLE)


@pytest.mark.parametrize("name,completion,syntax_ok,types_ok,line_text,span_text", TABLE, ids=[r[0] for r in TABLE])
def test_table(react_backend, name, completion, syntax_ok, types_ok, line_text, span_text):
    r = score(react_backend, completion)
    assert (r.metrics["syntax_ok"], r.metrics["types_ok"]) == (syntax_ok, types_ok), r.info
    missing = r.info.get("code") == "no_component"
    assert missing == (name in {row[0] for row in MISSING})
    assert r.score == (-1.0 if missing else {(1, 1): 1.0, (1, 0): 0.5, (0, 0): 0.0}[(syntax_ok, types_ok)])
    if line_text is None:
        assert r.spans == []
        return
    first = r.spans[0]
    lo, hi = _line_bounds(completion, line_text)
    assert lo <= first.start < first.end <= hi, (first, completion[first.start:first.end], r.info)
    assert completion[first.start:first.end].startswith(span_text), (completion[first.start:first.end], r.info)
    assert first.reward == (-0.5 if syntax_ok == 0 else -0.25) and r.info["message"]
    assert completion.count("\n", 0, first.start) + 1 == r.info["line"]


# --- options ---------------------------------------------------------------------------------

MANY_ERRORS = fenced("export function App() {\n" + "".join(f"  const v{i}: number = 's{i}';\n" for i in range(7)) + "  return <div />;\n}\n")


def test_type_error_cap_and_order(react_backend):
    r = score(react_backend, MANY_ERRORS, max_type_errors=3)
    assert r.metrics["n_errors"] == 7 and len(r.spans) == 3
    assert [MANY_ERRORS[s.start:s.end] for s in r.spans] == ["v0", "v1", "v2"]
    assert all(a.end <= b.start for a, b in zip(r.spans, r.spans[1:]))


def test_syntax_only_ignores_type_errors(react_backend):
    r = score(react_backend, MANY_ERRORS, types=False)
    assert r.score == 1.0 and r.spans == [] and "types_ok" not in r.metrics


def test_weights(react_backend):
    r = score(react_backend, MANY_ERRORS, syntax_weight=0.2, types_weight=0.8, type_penalty=0.1)
    assert r.score == pytest.approx(0.2) and {s.reward for s in r.spans} == {-0.1}


@pytest.mark.parametrize("options,says", [
    ({"max_type_errors": 0}, "'max_type_errors' must be an integer"),
    ({"syntax_weight": 0.2, "types_weight": 0.8},
     "'syntax passes, types fail' can earn a mean token reward as low as -0.05 but 'syntax error' as high as 0"),
    ({"syntax_penalty": 1.0}, "'syntax error' can earn a mean token reward as low as -1 but 'no component' as high as -1"),
    ({"pass_credit": 0.5}, "'syntax and types pass' can earn a mean token reward as low as 1"),
    ({"missing_score": 0.5}, "option 'missing_score' must be a number in [-1, 0]"),
    ({"K": 3}, "unknown react option(s) K;"),
])
def test_bad_option_is_a_bad_request(react_backend, options, says):
    with pytest.raises(BackendError) as err:
        score(react_backend, COUNTER, **options)
    assert err.value.type == "bad_request" and says in str(err.value)


def test_pass_credit_covers_the_code_outside_error_spans(react_backend):
    r = score(react_backend, MANY_ERRORS, max_type_errors=2, pass_credit=0.2)
    got = [(s.label, s.reward, MANY_ERRORS[s.start:s.end]) for s in r.spans]
    assert [g[:2] for g in got] == [("pass", 0.2), ("TS2322", -0.25), ("pass", 0.2), ("TS2322", -0.25), ("pass", 0.2)]
    assert got[0][2] == "export function App() {\n  const" and got[-1][2].endswith("return <div />;\n}")
    r = score(react_backend, fenced(COUNTER, before="Sure:\n"), pass_credit=0.2)
    [span] = r.spans
    assert r.score == 1.0 and r.spans[0].reward == 0.2 and fenced(COUNTER, before="Sure:\n")[span.start:span.end] == COUNTER.strip()


# --- hostile input: answered within the deadline, and the backend keeps working ----------------

def timed(backend: ReactBackend, completion: str, deadline_s: float):
    t0 = time.monotonic()
    try:
        result = backend.score(ScoreRequest(id="h", completion=completion), t0 + deadline_s)
    except (BackendError, BackendTimeout) as err:
        result = err
    # answered, not hung: a check that ignored its deadline would run on for its own many seconds (the
    # slow inputs) or for ever; the margin is what a loaded machine adds, not a speed measure
    assert time.monotonic() - t0 < deadline_s + 10
    return result


def test_megabyte_completion(react_backend):
    big = fenced("export function Wall() {\n  return <p>" + "lorem ipsum " * 90_000 + "</p>;\n}\n", before="é😀\n")
    assert len(big) > 1_000_000
    r = timed(react_backend, big, 30)
    assert r.metrics == {"syntax_ok": 1.0, "types_ok": 1.0, "compile": 1.0, "n_errors": 0.0}
    assert timed(react_backend, "word " * 210_000, 30).info["code"] == "no_component"


def test_deep_nesting(react_backend):
    depth = 10_000
    closed = "export function Deep() {\n  return " + "<div>" * depth + "</div>" * depth + ";\n}\n"
    r = timed(react_backend, closed, 30)  # TypeScript's recursion gives out: an error answer, not a crash
    assert isinstance(r, (BackendError, BackendTimeout)) or r.metrics["syntax_ok"] == 1.0
    unclosed = "export function Deep() {\n  return " + "<div>" * depth + ";\n}\n"
    r = timed(react_backend, unclosed, 30)
    assert r.metrics["syntax_ok"] == 0.0 and unclosed[r.spans[0].start:r.spans[0].end] == "}"
    assert score(react_backend, COUNTER).score == 1.0


def test_lone_surrogates(react_backend):
    code = "export function S() {\n  const s = '\udc00\ud800\ud83d';\n  const n: number = s;\n  return <b>{n}</b>;\n}\n"
    completion = fenced(code, before="\ud800 \U0001F600\n")
    r = timed(react_backend, completion, 30)
    assert r.metrics["types_ok"] == 0.0 and completion[r.spans[0].start:r.spans[0].end] == "n"


@pytest.mark.slow  # a Node restart: seconds; in make test, not make test-unit
def test_overrun_is_a_timeout_and_node_restarts(react_backend):
    slow = fenced("const s0: string = 'a';\n" * 60_000 + COUNTER)  # ~1.4 MB: the checker needs many seconds
    before = react_backend.restarts
    assert isinstance(timed(react_backend, slow, 1.5), BackendTimeout)
    assert react_backend.restarts == before + 1
    assert score(react_backend, COUNTER).score == 1.0  # the new Node process warms up and answers


@pytest.mark.slow  # a Node restart: seconds; in make test, not make test-unit
def test_a_check_queued_behind_an_overrunning_batch_times_out_by_its_own_deadline(react_backend):
    """The deadline counts from when the service starts the request, and a check waiting for Node is
    started (README "Deadlines and the batch queue"): behind a batch that runs to its deadline, a
    queued check is answered `timeout` by its own deadline (so a client's hang bound holds), with a
    message saying it never reached Node; it is never sent late, and Node restarts once."""
    import threading

    slow = fenced("const s0: string = 'a';\n" * 60_000 + COUNTER)
    before = react_backend.restarts
    first: list = []
    ahead = threading.Thread(target=lambda: first.append(timed(react_backend, slow, 3.0)))
    ahead.start()
    end = time.monotonic() + 10
    while not react_backend._checker.busy and time.monotonic() < end:  # the slow batch is with Node
        time.sleep(0.005)
    t0 = time.monotonic()
    queued = timed(react_backend, COUNTER, 0.8)
    waited = time.monotonic() - t0
    ahead.join()
    assert isinstance(queued, BackendTimeout) and "busy with earlier requests" in str(queued)
    assert 0.75 <= waited < 2.5  # answered at its own deadline, not when the batch ahead ends (3 s)
    assert isinstance(first[0], BackendTimeout) and react_backend.restarts == before + 1
    assert score(react_backend, COUNTER).score == 1.0


@pytest.mark.slow  # a Node restart: seconds; in make test, not make test-unit
def test_node_death_is_an_error_then_node_restarts(react_backend):
    os.kill(react_backend._checker.pid, signal.SIGKILL)
    before = react_backend.restarts
    assert isinstance(timed(react_backend, COUNTER, 30), BackendError)
    assert react_backend.restarts == before + 1
    assert score(react_backend, COUNTER).score == 1.0


JSX_AUGMENTATION = fenced("""declare global {
  namespace JSX {
    interface IntrinsicElements { blink: { speed: number } }
  }
}

export function Old() {
  return <blink speed={2}>hi</blink>;
}
""")
USES_BLINK = fenced("export function Uses() {\n  return <blink speed={2}>hi</blink>;\n}\n")


def test_checks_in_one_batch_give_the_verdicts_they_get_alone(react_backend):
    """Concurrent requests share one TypeScript program (one checker); each must still see only its
    own file: same score, spans and findings as when checked alone; code that augments global or
    module scope is checked in a program of its own."""
    from concurrent.futures import ThreadPoolExecutor

    completions = [row[1] for row in TABLE] + [JSX_AUGMENTATION, USES_BLINK]
    alone = [score(react_backend, c) for c in completions]
    react_backend._checker.largest_batch = 0  # the session's backend: only this test's batches count below
    with ThreadPoolExecutor(MAX_BATCH + 8) as pool:  # enough waiters to fill a batch
        together = list(pool.map(lambda c: score(react_backend, c), completions * 2))
    assert react_backend.largest_batch > 1  # the requests really were batched
    for a, b in zip(alone * 2, together):
        assert (a.score, a.spans, a.metrics, a.info) == (b.score, b.spans, b.metrics, b.info)
    assert alone[-1].metrics["types_ok"] == 0  # <blink> is unknown without the other file's augmentation
