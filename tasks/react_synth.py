"""`react_synth`: write a small TSX function component that follows a short spec.

Scored by the `react` service: syntax (esbuild), types (TypeScript) and the spec (option `spec`:
component name exported, props with their types, the state and its setter, the elements and their
texts, the list rendered with .map); success (`all_ok`) means all three hold. The supervised
corpus of `botgrpo bootstrap` injects realistic syntax faults at specific constructs with high
probability, so the warm-started model fails systematically in the same places.

Option `sites=k` (1-4) replaces the syntax faults with k independent *spec* sites, each broken in
the corpus with probability `site_rate` (default 1 - 0.25^(1/k), so about a quarter of the corpus
is clean at every k): the component's name (SITES[0]), the state's setter, the first literal text,
the list (written with .join instead of .map). Each site keeps the code valid and costs one spec
check with its own span, so a completion has k independent places to fail.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Callable

from botgrpo_tasks.base import NEXT_TURN, TURN_END, Example, SyntheticTask, between_turns
from botgrpo_tasks.errors import TaskError
from botgrpo_tasks.held_out import is_held_out
from botgrpo_tasks.react_synth_grammar import (FAULTS, Spec, constructs, first_text_child, render, requirements,
                                               sample_spec)

# Probability that a construct is broken in a corpus program. The list's </li> is dropped more
# often than not, so a warm-started model's greedy list is wrong; the rest are rarer slips.
FAULT_RATES = {
    "li_unclosed": 0.55,
    "map_brace": 0.1,
    "handler_paren": 0.4,
    "handler_brace": 0.08,
    "tag_mismatch": 0.2,
    "state_comma": 0.05,
    "props_comma": 0.1,
}


# The spec sites of option sites=k, in the order k adds them.
SITES = ("name", "setter", "text", "list")


def has_sites(spec: Spec, k: int) -> bool:
    """Whether `spec` contains the first k SITES (name and setter are always there)."""
    need_text = k >= 3 and first_text_child(spec) is None
    need_list = k >= 4 and all(c.kind != "list" for c in spec.children)
    return not (need_text or need_list)


# Rejection texts for the revise corpus: (the spec's reference row, a faulty program) pairs -> the
# user message a run would show after each (botgrpo_cli/turns/feedback.py asks the react service).
Reject = Callable[[list[tuple[dict, str]]], list[str]]


@dataclass(frozen=True)
class CorpusItem:
    spec: Spec
    faults: frozenset[str]
    prompt: str
    completion: str


def _is_eval(spec: Spec) -> bool:
    """Split by a hash of the prompt, so train and eval never share a spec whatever the seed."""
    return is_held_out(spec.prompt())


def draw_specs(seed: int, n: int, split: str, sites: int = 0) -> list[Spec]:
    """`n` distinct specs of one split, in a seeded order (only those holding `sites` SITES)."""
    rng = random.Random(f"react_synth/{split}/{seed}")
    want_eval = split == "eval"
    seen: set[str] = set()
    out: list[Spec] = []
    for _ in range(n * 400):
        spec = sample_spec(rng)
        key = spec.prompt()
        if _is_eval(spec) == want_eval and key not in seen and has_sites(spec, sites):
            seen.add(key)
            out.append(spec)
            if len(out) == n:
                return out
    raise ValueError(f"react_synth: the grammar has fewer than {n} distinct {split} specs")


def draw_faults(rng: random.Random, spec: Spec, rates: dict[str, float]) -> frozenset[str]:
    have = constructs(spec)
    return frozenset(f for f, where in FAULTS.items() if where in have and rng.random() < rates[f])


class ReactSynthTask(SyntheticTask):
    """Options: n_train (default 2000), n_eval (256), fault_scale (multiplies FAULT_RATES, 1.0),
    sites (0 = the syntax faults; 1-4 = that many spec sites instead), site_rate (see above),
    revise (false; true: the warm start learns repair turns, for rollout.max_turns > 1: see REVISE_RATE)."""

    name = "react_synth"
    service = "react"
    render_service = "render"
    revises = True  # rollout.max_turns > 1: the checker's diagnostic, then a revised attempt
    service_options: dict[str, Any] = {"spec": True}
    success_metric = "all_ok"
    step_separator = None
    stop = ()  # completions end with the model's EOS
    max_new_tokens = 96
    eval_metrics = ("all_ok", "compile", "syntax_ok", "types_ok", "spec_ok")

    def __init__(self, seed: int = 0, **options: Any):
        super().__init__(seed=seed, **options)
        sites = options.get("sites", 0)
        if isinstance(sites, bool) or not isinstance(sites, int) or not 0 <= sites <= len(SITES):
            raise TaskError(f"task 'react_synth': sites must be an integer from 0 to {len(SITES)}, got {sites!r}")
        rate = options.get("site_rate", 1 - 0.25 ** (1 / sites) if sites else 0.0)
        if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0 <= rate <= 1:
            raise TaskError(f"task 'react_synth': site_rate must be a number in [0, 1], got {rate!r}")
        self.sites, self.site_rate = sites, float(rate)
        if sites:  # a longer warm start, so the tiny model copies names and texts from the prompt
            self.bootstrap_sft = {"tiny": {"steps": 1500}}

    @property
    def corpus_version(self) -> int:
        """2 (revise only): the repair turns' rejections are the react service's own messages."""
        return 2 if self.options.get("revise", False) else 1

    @property
    def rejections_from_service(self) -> bool:
        """The bootstrap passes corpus() a Reject that asks the task's service (revise only)."""
        return bool(self.options.get("revise", False))

    def _examples(self, split: str, n: int) -> list[Example]:
        return [Example(f"react_synth/{split}/{i}", s.prompt(), reference_row(s))
                for i, s in enumerate(draw_specs(self.seed, n, split, self.sites))]

    def corpus_items(self, n: int, seed: int = 0, reject: Reject | None = None) -> list[CorpusItem]:
        """Training-split specs with their programs, a share of them faulty (FAULT_RATES, or with
        sites=k each of the first k SITES at site_rate). With revise, most faulty programs are followed
        by a rejection and the clean program: `reject`'s message for it (the service's first
        diagnostic, as a run shows it), or without one the names of the broken constructs."""
        scale = float(self.options.get("fault_scale", 1.0))
        rates = {k: min(1.0, v * scale) for k, v in FAULT_RATES.items()}
        rng = random.Random(f"react_synth/corpus/{seed}")
        specs = draw_specs(seed, n, "train", self.sites)
        items = []
        for spec in specs:
            if self.sites:
                faults = frozenset(site for site in SITES[: self.sites] if rng.random() < self.site_rate)
            else:
                faults = draw_faults(rng, spec, rates)
            completion = render(spec, faults)
            revised = bool(faults) and self.options.get("revise", False) and rng.random() < REVISE_RATE
            items.append((CorpusItem(spec, faults, spec.prompt(), completion), revised))
        todo = [it for it, revised in items if revised]
        if reject is not None:
            messages = reject([(reference_row(it.spec), it.completion) for it in todo])
        else:
            messages = [rejection(it.faults) for it in todo]
        by_item = dict(zip(map(id, todo), messages))
        return [CorpusItem(it.spec, it.faults, it.prompt, repaired(it.completion, by_item[id(it)], render(it.spec)))
                if revised else it for it, revised in items]

    def corpus(self, n: int, seed: int = 0, reject: Reject | None = None) -> list[tuple[str, str]]:
        return [(it.prompt, it.completion) for it in self.corpus_items(n, seed, reject)]


def reference_row(spec: Spec) -> dict:
    """What the react service checks a program of `spec` against (an example's reference)."""
    return {"spec": spec.prompt(), "reference_code": render(spec), "requirements": requirements(spec)}


# The repair variant (task option revise=true): most faulty corpus programs are followed by the
# checker's rejection, as the repair turns show it (botgrpo_cli/turns/feedback.py), and the clean
# program, as one transcript (base.TURN_END). `botgrpo bootstrap` asks the react service for the
# rejection (its first diagnostic: the words and line a run shows); rejection() names the broken
# constructs where no service is at hand. The model learns to answer the request with the whole
# program, faults fixed.
REVISE_RATE = 0.8
REPAIR_REQUEST = "Fix it and answer again with the whole solution."


def rejection(faults: frozenset[str]) -> str:
    broken = ", ".join(sorted(f.replace("_", " ") for f in faults))
    return f"The checker rejected it: {broken}. {REPAIR_REQUEST}"


def repaired(faulty: str, message: str, clean: str) -> str:
    return faulty + TURN_END + between_turns(message) + NEXT_TURN + clean


def make_task(seed: int = 0, **options: Any) -> ReactSynthTask:
    return ReactSynthTask(seed=seed, **options)
