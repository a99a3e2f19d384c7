"""The react service with option spec on (real Node checker): reference programs of react_synth
pass all three stages, and dropping the component's name or its list fails the spec."""

import time

import pytest

from botgrpo_rewards.backend import BackendError
from botgrpo_rewards.protocol import ScoreRequest
from botgrpo_tasks import get_task


@pytest.fixture(scope="module")
def backend(react_backend):
    return react_backend


def score(backend, completion, reference, **options):
    req = ScoreRequest(id="t", completion=completion, reference=reference, options={"spec": True, **options})
    return backend.score(req, time.monotonic() + 60)


def test_references_pass_and_dropping_the_name_or_the_list_fails(backend):
    task = get_task("react_synth", n_eval=40)
    listed = 0
    for ex in task.eval_examples():
        code, ref = ex.reference["reference_code"], ex.reference
        ok = score(backend, code, ref)
        assert (ok.score, ok.metrics["all_ok"], ok.spans) == (1.0, 1.0, []), ex.prompt
        name = ref["requirements"]["component"]
        other = code.replace(f"function {name}", "function Component")
        renamed = score(backend, other, ref)
        assert renamed.metrics["syntax_ok"] == renamed.metrics["types_ok"] == 1.0
        assert (renamed.metrics["spec_ok"], renamed.metrics["all_ok"], renamed.metrics["spec_component_failed"]) == (0, 0, 1)
        assert renamed.score < 1.0 and [s.label for s in renamed.spans] == ["spec_component"]
        assert other[renamed.spans[0].start:renamed.spans[0].end] == "Component"
        if "list" in ref["requirements"]:
            listed += 1
            items = ref["requirements"]["list"]
            start = code.index("<ul>")
            end = code.index("</ul>", start) + len("</ul>")
            dropped = score(backend, code[:start] + "<ul></ul>" + code[end:], ref)
            assert dropped.metrics["syntax_ok"] == 1.0 and dropped.metrics["spec_list_failed"] == 1.0
            assert dropped.metrics["all_ok"] == 0.0 and any(s.label == "spec_list" for s in dropped.spans), items
    assert listed >= 5


def test_spec_spans_sit_beside_a_syntax_error_span(backend):
    ex = get_task("react_synth", n_eval=5).eval_examples()[0]
    name = ex.reference["requirements"]["component"]
    code = ex.reference["reference_code"].replace(f"function {name}", "function Other").replace("</div>", "</dvi>")
    got = score(backend, code, ex.reference)
    assert got.metrics["syntax_ok"] == 0.0 and got.score == 0.0
    assert sorted(s.label for s in got.spans) == ["spec_component", "syntax"]


def test_spec_option_and_requirements_are_checked(backend):
    with pytest.raises(BackendError, match="option 'spec' must be true or false"):
        score(backend, "x", {}, spec="yes")
    with pytest.raises(BackendError, match="reference.requirements must be an object") as err:
        score(backend, "export function A() { return <p/>; }", {"spec": "no requirements"})
    assert err.value.type == "bad_request"
