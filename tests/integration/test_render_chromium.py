"""The render backend with real Chromium: renders, similarity, and hostile components.

One backend (one browser, one page) serves the whole module, so every hostile case is followed by
a normal render in the same worker (escapes and leaks between requests: test_render_sandbox.py). The similarity judge is checked on real task references
(tasks/data/react) against blank pages, the other references, and small hand edits of each.
"""

from __future__ import annotations

import asyncio
import io
import os
import signal
import statistics
import time

import numpy as np
import pytest
from PIL import Image

from botgrpo_rewards.backend import BackendError, BackendTimeout
from botgrpo_rewards.protocol import ScoreRequest
from botgrpo_rewards.render.judges import compare_similarity
from botgrpo_tasks.react import load_specs

GOOD = """```tsx
import React, { useState } from "react";
export default function App() {
  const [items] = useState<string[]>(["Milk", "Eggs", "Bread"]);
  return (
    <div style={{ padding: 24, fontFamily: "sans-serif" }}>
      <h1 style={{ color: "#2255aa" }}>Shopping list</h1>
      <ul>{items.map((i) => <li key={i}>{i}</li>)}</ul>
      <button style={{ background: "#22aa55", color: "white", padding: 8 }}>Add item</button>
    </div>
  );
}
```"""
REFERENCE = GOOD.split("```tsx\n")[1].split("```")[0]
DIFFERENT = """export default function App() {
  return <div style={{ background: "#111", color: "#fd0", height: 480, fontSize: 40 }}>Weather: sunny, 31 C</div>;
}"""
DEADLINE_S = 2.0
# Small edits of real references: (old, new) for one text, one colour, one removed element.
EDITS = {
    "todo_list": [('"Write report"', '"Call mom"'), ('background: "#f9fafb"', 'background: "#fef3c7"'),
                  ('      <small>{left} item{left === 1 ? "" : "s"} left</small>\n', "")],
    "stat_card": [('"Monthly revenue"', '"Active users"'), ('color: "#6b7280"', 'color: "#2563eb"'),
                  ('      <span style={{ fontSize: 12, color: "#9ca3af", marginLeft: 6 }}>vs last month</span>\n',
                   "")],
    "product_card": [('"Trail Running Shoe"', '"Canvas Sneaker"'), ('color = "#0ea5e9"', 'color = "#f97316"'),
                     ('        <p style={{ margin: "0 0 12px", fontSize: 18, fontWeight: 700 }}>${price.toFixed(2)}</p>\n',
                      "")],
    "voting_poll": [('"Which language should we learn next?"', '"Pick a language"'),
                    ('"1px solid #a78bfa"', '"1px solid #f59e0b"'),
                    ('      <small>{total} vote{total === 1 ? "" : "s"}</small>\n', "")],
}
NEAR_BLANK = {"blank": "export default function App() { return <div />; }",
              "hello": "export default function App() { return <div>Hello</div>; }"}


@pytest.fixture(scope="module")
def backend(render_backend):
    return render_backend


def _score(backend, completion, deadline_s=DEADLINE_S, **options):
    req = ScoreRequest(id="t", completion=completion, reference={"reference_code": REFERENCE}, options=options)
    return backend.score(req, time.monotonic() + deadline_s)


def _assert_still_serving(backend):
    # A generous deadline: after a hostile render its page is rebuilt first (slow on a loaded machine).
    res = _score(backend, GOOD, deadline_s=10)
    assert res.metrics["rendered"] == 1.0 and res.score == 1.0


def test_valid_component_renders_non_blank(backend, tmp_path, monkeypatch):
    monkeypatch.setattr(backend, "save_dir", str(tmp_path))  # the service's setting, not the request's
    res = _score(backend, GOOD, save_group="../../a/..")
    assert res.metrics["rendered"] == 1.0
    shot = tmp_path / "render" / "render" / "a" / "render" / "t.png"  # ".." is only a name inside save_dir
    assert res.info["screenshot"] == str(shot)
    pixels = np.asarray(Image.open(io.BytesIO(shot.read_bytes())).convert("RGB"))
    assert pixels.shape == (480, 640, 3)
    assert len(np.unique(pixels.reshape(-1, 3), axis=0)) > 10  # text and colours, not a flat page


def test_identical_scores_one_and_different_lower(backend):
    same = _score(backend, GOOD)
    other = _score(backend, DIFFERENT)
    assert same.score == 1.0 and same.metrics["similarity"] == 1.0
    assert other.metrics["rendered"] == 1.0 and other.score < 0.5


@pytest.fixture(scope="module")
def reference_scores(backend):
    """Similarity scores against four real references: {ref: {"identical", "blank", "hello",
    "unrelated": [...], "edits": [text, colour, removed], "all_three": ...}}."""
    specs = {s.id: s for s in load_specs() if s.id in EDITS}

    def render(code):
        return backend.render_code(code, time.monotonic() + 30)

    refs = {k: render(specs[k].code) for k in EDITS}
    near_blank = {name: render(code) for name, code in NEAR_BLANK.items()}
    scores = {}
    for k, ref in refs.items():
        code, combined = specs[k].code, specs[k].code
        for old, new in EDITS[k]:
            assert code.count(old) == 1, f"{k}: the edit target {old!r} is gone; update EDITS"
            combined = combined.replace(old, new)
        edited = [render(code.replace(old, new)) for old, new in EDITS[k]] + [render(combined)]
        assert all(e.rendered and e.png != ref.png for e in edited), k

        def score(cand):
            return compare_similarity(cand, ref)["score"]
        scores[k] = {"identical": score(ref), **{name: score(r) for name, r in near_blank.items()},
                     "unrelated": [score(o) for name, o in refs.items() if name != k],
                     "edits": [score(e) for e in edited[:3]], "all_three": score(edited[3])}
    return scores


def test_similarity_identical_is_one_and_blank_near_zero(reference_scores):
    for k, s in reference_scores.items():
        assert s["identical"] == 1.0, k
        assert s["blank"] == 0.0 and s["hello"] <= 0.1, (k, s)


def test_similarity_of_unrelated_references_is_low(reference_scores):
    unrelated = [u for s in reference_scores.values() for u in s["unrelated"]]
    assert statistics.median(unrelated) <= 0.35 and max(unrelated) < 0.5, unrelated


def test_similarity_of_small_edits_is_high_and_falls_with_edit_size(reference_scores):
    singles = [e for s in reference_scores.values() for e in s["edits"]]
    assert statistics.median(singles) >= 0.7 and min(singles) >= 0.6, reference_scores
    for k, s in reference_scores.items():
        assert min(s["edits"]) > max(s["unrelated"]), (k, s)  # any small edit beats another component
        assert s["all_three"] < statistics.mean(s["edits"]), (k, s)  # three edits cost more than one
        assert s["all_three"] > max(s["unrelated"]), (k, s)


def test_throw_in_render_is_a_failed_render(backend):
    res = _score(backend, 'export default function App() { throw new Error("kaboom"); }')
    assert res.score == 0.0 and res.metrics["rendered"] == 0.0
    assert "kaboom" in res.info["render_error"]
    _assert_still_serving(backend)


@pytest.mark.parametrize("completion", ["", "Sorry, I cannot build that page.", "```tsx\n```\n", "const x = 1;"])
def test_no_component_scores_missing_below_a_failed_render(backend, completion):
    res = _score(backend, completion)
    assert (res.score, res.metrics["rendered"], res.metrics["similarity"]) == (-1.0, 0.0, 0.0)
    assert "no component" in res.info["render_error"]
    assert _score(backend, completion, missing_score=-0.5).score == -0.5


def test_rendered_outcomes_rank_above_failed_renders(backend):
    unlike, failed = _score(backend, DIFFERENT), _score(backend, "export default function App() { return <div>; }")
    assert unlike.metrics["rendered"] == 1.0 and unlike.score == pytest.approx(0.1 + 0.9 * unlike.metrics["similarity"])
    assert unlike.score >= 0.1 > failed.score == 0.0


@pytest.mark.parametrize("options,says", [
    ({"rendered_score": 0}, "'rendered' can earn a mean token reward as low as 0 but 'did not render' as high as 0"),
    ({"missing_score": 0}, "'did not render' can earn a mean token reward as low as 0 but 'no component'"),
    ({"missing_score": -2}, "option 'missing_score' must be a number in [-1, 0]"),
])
def test_options_that_break_the_render_order_are_refused(backend, options, says):
    with pytest.raises(BackendError) as err:
        _score(backend, GOOD, **options)
    assert err.value.type == "bad_request" and says in str(err.value)


def test_compile_error_is_a_failed_render(backend):
    res = _score(backend, "export default function App() { return <div>; }")
    assert res.score == 0.0 and "compile error" in res.info["render_error"]


def test_blank_render_scores_zero(backend):
    res = _score(backend, "export default function App() { return <div style={{ width: 50, height: 50 }} />; }")
    assert res.score == 0.0 and "blank" in res.info["render_error"]


def test_console_errors_are_reported(backend):
    res = _score(backend, 'export default function App() { console.error("widget broke"); return <p>Shopping list</p>; }')
    assert res.metrics["rendered"] == 1.0 and res.info["n_console_errors"] == 1
    assert "widget broke" in res.info["console_errors"]


def test_a_render_cannot_tamper_with_the_next(backend):
    tamper = ('import React from "react";\nexport default function App() {\n'
              "  try { (window as any).__botgrpoMount = () => ({ nodes: 0 }); } catch (e) {}\n"
              "  try { (React as any).createElement = () => null; } catch (e) {}\n"
              "  const t0 = Date.now();  // later, wipe whatever page this realm shows\n"
              "  setInterval(() => { if (Date.now() - t0 > 150) document.body.innerHTML = ''; }, 1);\n"
              "  return <p>tamper</p>;\n}")
    _score(backend, tamper)
    time.sleep(0.3)
    _assert_still_serving(backend)


def test_alert_does_not_block(backend):
    res = _score(backend, 'export default function App() { alert("hi"); confirm("ok?"); return <p>after alert</p>; }')
    assert res.metrics["rendered"] == 1.0


@pytest.mark.parametrize("body", [
    "export default function App() { while (true) {} }",
    'import { useEffect } from "react";\nexport default function App() { useEffect(() => { for (;;) {} }, []); return <p>x</p>; }',
    "export default function App() { return <div>{Array.from({ length: 1000000 }, (_, i) => <span key={i}>{i}</span>)}</div>; }",
    # 4 GB in 1 MB chunks: the renderer's heap cap stops it (a crash or a timeout, never a hang).
    "export default function App() { const a: number[][] = []; for (let i = 0; i < 4096; i++) a.push(new Array(131072).fill(i + 0.5)); return <p>{a.length}</p>; }",
], ids=["loop-render", "loop-effect", "million-nodes", "4gb"])
def test_hostile_answered_in_time_and_worker_survives(backend, body):
    t0 = time.monotonic()
    try:
        res = _score(backend, body)
        assert res.score == 0.0 or body.startswith("export default function App() { return <div>{Array")
    except BackendTimeout:
        pass
    # answered, not hung (the loops never end on their own); the margin is for a loaded machine
    assert time.monotonic() - t0 < DEADLINE_S + 30
    _assert_still_serving(backend)


def test_browser_is_restarted_after_it_dies(backend):
    renderer = backend._renderer
    _assert_still_serving(backend)  # the reference is rendered and cached before the browser dies
    asyncio.run_coroutine_threadsafe(renderer._browser.close(), renderer._loop).result(10)
    # The page may be found dead by the render (a failed render) or by the reload before it.
    res = _score(backend, GOOD, deadline_s=10)
    assert res.score == 1.0 or "crashed" in res.info["render_error"]
    res = _score(backend, GOOD, deadline_s=10)
    assert res.score == 1.0 and renderer.restarts == 1


def test_pairwise_similarity_prefers_the_closer_render(backend):
    def pair(completion, other):
        req = ScoreRequest(id="p", completion=completion, options={"mode": "pairwise"},
                           reference={"reference_code": REFERENCE, "other_code": other})
        return backend.score(req, time.monotonic() + 5)
    win, loss = pair(GOOD, DIFFERENT), pair(DIFFERENT, REFERENCE)
    # A lost pair still rendered: it scores the rendered floor (rendered_score 0.1), above a failed render.
    assert (win.score, win.metrics["judge"], loss.score, loss.metrics["judge"]) == (1.0, 1.0, 0.1, 0.0)


def test_vlm_judge_through_the_backend(backend, monkeypatch):
    from test_render_vlm import FakeServer

    server = FakeServer([(0, 200, '{"score": 7, "reason": "fine"}')])
    monkeypatch.setattr(backend, "vlm_base_url", server.url)  # the service's setting
    try:
        req = ScoreRequest(id="v", completion=GOOD, prompt="A shopping list", reference={"reference_code": REFERENCE},
                           options={"judge": "vlm", "vlm_model": "m"})
        res = backend.score(req, time.monotonic() + 5)
    finally:
        server.close()
    # score = rendered_score + (1 - rendered_score) * judge = 0.1 + 0.9 * 0.7
    assert res.score == pytest.approx(0.73) and res.metrics["judge"] == pytest.approx(0.7) and res.info["reason"] == "fine"
    images = [p for p in server.requests[0]["messages"][0]["content"] if p["type"] == "image_url"]
    assert len(images) == 2 and all(p["image_url"]["url"].startswith("data:image/png;base64,iVBOR") for p in images)


def test_compiler_helper_is_respawned(backend, pid_gone):
    compiler = backend._compiler
    pid = compiler.pid
    os.kill(pid, signal.SIGKILL)  # kill -9 from outside
    assert pid_gone(pid, within_s=10)  # reaped by its reader
    _assert_still_serving(backend)
    assert compiler.restarts == 1 and compiler.pid != pid
