"""`aime` examples scored by the real math service: the reference answer is what it checks against."""

from __future__ import annotations

import time
from pathlib import Path

from botgrpo_rewards.protocol import ScoreRequest
from botgrpo_rewards.registry import load_backend
from botgrpo_tasks import get_task

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "aime_sample.jsonl"


def test_aime_examples_score_with_the_math_service():
    task = get_task("aime", path=str(SAMPLE), eval_path=str(SAMPLE))
    backend = load_backend(task.service, workers=1)
    backend.start()
    try:
        for ex in task.eval_examples():
            gold = int(ex.reference["answer"])
            for answer, want in ((gold, 1.0), (gold + 1, 0.0)):
                completion = f"Working it out step by step.\n\nSo the answer is \\boxed{{{answer}}}."
                request = ScoreRequest(
                    id=ex.id, completion=completion, prompt=ex.prompt, reference=ex.reference, options=task.service_options
                )
                result = backend.score(request, time.monotonic() + 30)
                assert result.metrics[task.success_metric] == want, (ex.id, answer, result.info)
    finally:
        backend.close()
