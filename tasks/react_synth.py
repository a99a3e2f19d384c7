"""`react_synth`: write a small TSX function component that follows a short spec.

Scored by the `react` service (syntax with esbuild, types with the TypeScript LanguageService).
The supervised corpus of `botgrpo bootstrap` injects realistic syntax faults at specific constructs
with high probability, so the warm-started model fails systematically in the same places.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass
from typing import Any

from botgrpo_tasks.base import Example, SyntheticTask
from botgrpo_tasks.react_synth_grammar import FAULTS, Spec, constructs, render, sample_spec

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


@dataclass(frozen=True)
class CorpusItem:
    spec: Spec
    faults: frozenset[str]
    prompt: str
    completion: str


def _is_eval(spec: Spec) -> bool:
    """Split by a hash of the prompt, so train and eval never share a spec whatever the seed."""
    return hashlib.sha256(spec.prompt().encode()).digest()[0] < 26  # about 10%


def draw_specs(seed: int, n: int, split: str) -> list[Spec]:
    """`n` distinct specs of one split, in a seeded order."""
    rng = random.Random(f"react_synth/{split}/{seed}")
    want_eval = split == "eval"
    seen: set[str] = set()
    out: list[Spec] = []
    for _ in range(n * 400):
        spec = sample_spec(rng)
        key = spec.prompt()
        if _is_eval(spec) == want_eval and key not in seen:
            seen.add(key)
            out.append(spec)
            if len(out) == n:
                return out
    raise ValueError(f"react_synth: the grammar has fewer than {n} distinct {split} specs")


def draw_faults(rng: random.Random, spec: Spec, rates: dict[str, float]) -> frozenset[str]:
    have = constructs(spec)
    return frozenset(f for f, where in FAULTS.items() if where in have and rng.random() < rates[f])


class ReactSynthTask(SyntheticTask):
    """Options: n_train (default 2000), n_eval (256), fault_scale (multiplies FAULT_RATES, 1.0)."""

    name = "react_synth"
    service = "react"
    service_options: dict[str, Any] = {}
    success_metric = "syntax_ok"
    step_separator = None
    stop = ()  # completions end with the model's EOS
    max_new_tokens = 96
    eval_metrics = ("syntax_ok", "types_ok")

    def _examples(self, split: str, n: int) -> list[Example]:
        return [
            Example(f"react_synth/{split}/{i}", s.prompt(), {"spec": s.prompt(), "reference_code": render(s)})
            for i, s in enumerate(draw_specs(self.seed, n, split))
        ]

    def corpus_items(self, n: int, seed: int = 0) -> list[CorpusItem]:
        """Training-split specs with their programs, a share of them faulty (see FAULT_RATES)."""
        scale = float(self.options.get("fault_scale", 1.0))
        rates = {k: min(1.0, v * scale) for k, v in FAULT_RATES.items()}
        rng = random.Random(f"react_synth/corpus/{seed}")
        specs = draw_specs(seed, n, "train")
        items = []
        for spec in specs:
            faults = draw_faults(rng, spec, rates)
            items.append(CorpusItem(spec, faults, spec.prompt(), render(spec, faults)))
        return items

    def corpus(self, n: int, seed: int = 0) -> list[tuple[str, str]]:
        return [(it.prompt, it.completion) for it in self.corpus_items(n, seed)]


def make_task(seed: int = 0, **options: Any) -> ReactSynthTask:
    return ReactSynthTask(seed=seed, **options)
