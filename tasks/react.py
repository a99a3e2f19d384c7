"""`react`: write a React 18 + TypeScript UI component from a hand-written specification.

The specs (tasks/data/react/specs.jsonl) and their reference solutions (one `<id>.tsx` beside it)
were written for this project. Each spec line has `id`, `component` (the function's name), `split`
(a fixed train/eval assignment) and `spec` (props, behaviour, look). The prompt adds the answer
format every spec shares.

Scoring: the `react` service (syntax with esbuild, strict types with TypeScript, and option `spec`:
the component exported under its name, each plainly typed prop declared with its type). Option
`render_judge=True` scores with the `render` service instead: the component is rendered in
Chromium and compared with the rendered reference (`judge: "similarity"`), so eval reports
`rendered` and `similarity` and success means the component rendered.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from botgrpo_tasks.base import Example, Task
from botgrpo_tasks.errors import TaskError

DATA_DIR = Path(__file__).parent / "data" / "react"
SPLITS = ("train", "eval")
_PROP = re.compile(r"`([A-Za-z_$][\w$]*)` \((string|number|boolean)(\[\])?[,)]")

ANSWER_FORMAT = (
    "Answer with a single ```tsx fenced code block: one TypeScript file for React 18 that "
    "default-exports the function component `{component}`. Import only from \"react\" (no other "
    "packages, no CSS files); style with inline styles or plain className. Every prop is optional "
    "with the default given, so `<{component} />` renders on its own. The code must type-check "
    "under TypeScript's strict mode."
)


@dataclass(frozen=True)
class ComponentSpec:
    """One hand-written UI task and its reference solution."""

    id: str
    component: str
    split: str
    spec: str
    code: str

    def requirements(self) -> dict[str, Any]:
        """What the react service's spec check can hold every answer to: the component's name and
        each prop written `name` (type, ...) with a plain type (string, number, boolean, T[])."""
        props = [[n, t + array] for n, t, array in _PROP.findall(self.spec)]
        return {"component": self.component, "props": props}

    def prompt(self) -> str:
        return f"Write a React component `{self.component}`.\n{self.spec}\n\n" + ANSWER_FORMAT.format(component=self.component)


@lru_cache(maxsize=1)
def load_specs() -> tuple[ComponentSpec, ...]:
    """All specs in file order, each with its reference code."""
    specs = []
    for n, line in enumerate((DATA_DIR / "specs.jsonl").read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        row = json.loads(line)
        if row["split"] not in SPLITS:
            raise ValueError(f"react specs line {n}: split must be one of {SPLITS}, got {row['split']!r}")
        code = (DATA_DIR / f"{row['id']}.tsx").read_text(encoding="utf-8")
        specs.append(ComponentSpec(row["id"], row["component"], row["split"], row["spec"], code))
    return tuple(specs)


class ReactTask(Task):
    """Options: render_judge (bool, default False): score with the render service's similarity judge.

    The split is fixed in the data, so `seed` does not change which specs are train or eval.
    """

    name = "react"
    service = "react"
    render_service = "render"
    revises = True  # rollout.max_turns > 1: the checker's diagnostic, then a revised attempt
    service_options: dict[str, Any] = {"spec": True}  # name and typed props, see ComponentSpec.requirements
    success_metric = "syntax_ok"
    step_separator = None
    stop = ()  # completions end with the model's EOS
    max_new_tokens = 1024
    eval_metrics = ("compile", "syntax_ok", "types_ok", "spec_ok", "all_ok")

    def __init__(self, seed: int = 0, render_judge: bool = False, **options: Any):
        unknown = ", ".join(sorted(set(options) - {"think_tags"}))
        if unknown:
            raise TaskError(f"task 'react' has no option(s) {unknown}; its options are render_judge=true|false "
                            "and think_tags")
        if not isinstance(render_judge, bool):
            raise TaskError(f"task 'react': render_judge must be true or false, got {render_judge!r}")
        super().__init__(seed=seed, render_judge=render_judge, **options)
        if render_judge:
            self.service = "render"
            self.service_options = {"judge": "similarity"}
            self.success_metric = "rendered"
            self.eval_metrics = ("rendered", "similarity")

    def _examples(self, split: str) -> list[Example]:
        return [
            Example(id=f"react/{split}/{s.id}", prompt=s.prompt(), reference={"spec": s.prompt(), "reference_code": s.code,
                                                                       "requirements": s.requirements()})
            for s in load_specs()
            if s.split == split
        ]

    def train_examples(self) -> list[Example]:
        return self._examples("train")

    def eval_examples(self) -> list[Example]:
        return self._examples("eval")


def make_task(seed: int = 0, **options: Any) -> ReactTask:
    return ReactTask(seed=seed, **options)
