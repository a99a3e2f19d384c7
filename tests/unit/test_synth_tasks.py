"""The synthetic tasks: deterministic, disjoint splits, prompts that fix content, corpora whose
injected faults sit where they should (compilation itself is checked in the integration tests)."""

import re

import pytest

from botgrpo_tasks import get_task
from botgrpo_tasks.arith_synth import NAMES, Step
from botgrpo_tasks.react_synth_grammar import FAULTS, render


@pytest.mark.parametrize("name", ["react_synth", "arith_synth"])
def test_same_seed_same_examples_other_seed_others(name):
    small = dict(n_train=300, n_eval=100)
    a, b, c = (get_task(name, seed=s, **small) for s in (0, 0, 1))
    assert a.train_examples() == b.train_examples()
    assert a.eval_examples() == b.eval_examples()
    assert a.corpus(300, seed=0) == b.corpus(300, seed=0)
    assert [e.prompt for e in a.train_examples()[:50]] != [e.prompt for e in c.train_examples()[:50]]


@pytest.mark.parametrize("name", ["react_synth", "arith_synth"])
def test_train_and_eval_are_disjoint_and_distinct(name):
    for seed in (0, 1):
        task = get_task(name, seed=seed)
        train = [e.prompt for e in task.train_examples()]
        evals = [e.prompt for e in task.eval_examples()]
        corpus = [p for p, _ in task.corpus(2000, seed=seed)]
        assert len(set(train)) == len(train) and len(set(evals)) == len(evals)
        assert not set(evals) & (set(train) | set(corpus))
        assert len({e.id for e in task.train_examples()}) == len(train)


def test_react_prompt_names_everything_the_program_contains():
    task = get_task("react_synth")
    for item in task.corpus_items(300):
        spec, prompt = item.spec, item.prompt
        assert f"Component {spec.name}\n" in prompt
        for prop, type_ in spec.props:
            assert f"{prop}: {type_}" in prompt
        assert f"state {spec.state[0]}: {spec.state[1]}" in prompt
        assert prompt.count("\n- ") == len(spec.children)
        code = render(spec)
        for child in spec.children:
            assert child.text in prompt and child.text in code
            if child.ref:
                assert child.ref in prompt and f"{{{child.ref}" in code
    # different prompts give different programs: the prompt fixes the content
    programs = {it.prompt: render(it.spec) for it in task.corpus_items(300)}
    assert len(set(programs.values())) == len(programs)


def test_react_corpus_mixes_clean_and_faulty_programs_at_every_fault_site():
    items = get_task("react_synth").corpus_items(2000)
    clean = sum(not it.faults for it in items) / len(items)
    assert 0.35 <= clean <= 0.7
    seen = {f for it in items for f in it.faults}
    assert seen == set(FAULTS)
    listed = [it for it in items if any(c.kind == "list" for c in it.spec.children)]
    dropped = sum("li_unclosed" in it.faults for it in listed) / len(listed)
    assert dropped > 0.5  # the warm-started model's argmax should drop </li>
    for it in items:
        assert (it.completion == render(it.spec)) == (not it.faults)


def test_react_fault_scale_changes_the_share():
    clean = lambda scale: sum(not it.faults for it in get_task("react_synth", fault_scale=scale).corpus_items(500))
    assert clean(0.0) == 500 and clean(0.5) > clean(1.0)


_EQ = re.compile(r"^(-?\d+) ([-+*]) (\d+) = (-?\d+)$")


def _true(a: int, op: str, b: int, r: int) -> bool:
    # integer arithmetic on the parsed numbers; corpus text is never evaluated as code
    return r == {"+": a + b, "-": a - b, "*": a * b}[op]


def test_arith_solutions_clean_steps_true_slipped_steps_false():
    task = get_task("arith_synth")
    items = task.corpus_items(1000)
    for it in items:
        paras = it.completion.split("\n\n")
        assert 4 <= len(paras) <= 6 and paras[-1].startswith("\\boxed{")
        steps = [_EQ.match(p) for p in paras[:-1]]
        assert all(steps), it.completion
        verdicts = [_true(int(m[1]), m[2], int(m[3]), int(m[4])) for m in steps]
        assert all(int(m[4]) >= 0 for m in steps), it.completion  # slips never make a count negative
        for i, ok in enumerate(verdicts):
            if i in it.slips:
                assert not ok
            elif not it.slips:
                assert ok
        answer = int(paras[-1][len("\\boxed{") : -1])
        assert answer == int(steps[-1][4])
        if not it.slips:
            assert answer == it.problem.answer()
    clean = sum(not it.slips for it in items) / len(items)
    assert 0.15 <= clean <= 0.35  # most problems invite a carry or borrow, and those slip nearly always


def test_arith_reference_and_wiring():
    task = get_task("arith_synth")
    ex = task.eval_examples()[0]
    assert ex.reference["answer"].lstrip("-").isdigit()
    assert task.service == "math" and task.service_options == {"steps": True} and task.step_separator == "\n\n"
    assert any(n in p for p, _ in task.corpus(200) for n in NAMES if not n.isascii())
    assert Step(6, "*", 3).value() == 18 and Step(7, "-", 9).value() == -2


def test_react_wiring():
    task = get_task("react_synth")
    assert task.service == "react" and task.success_metric == "all_ok" and task.service_options == {"spec": True}
    assert set(task.eval_metrics) == {"all_ok", "compile", "syntax_ok", "types_ok", "spec_ok"}
    ex = task.eval_examples()[0]
    assert ex.reference["spec"] == ex.prompt and "export function" in ex.reference["reference_code"]
    assert ex.reference["requirements"]["component"] in ex.prompt
