"""Two reward functions for `reward.function=examples/extending/reward_function.py:NAME`.

`contains_answer` is a TRL reward function, unchanged: it gets the batch's prompts and completions
and every other dataset column as a keyword list (here `answer`), and returns one float each.
`answer_with_spans` gives the same scores plus a token-level reward: a span over the answer's
characters, in the protocol's units (code points of the completion, rewards in [-1, 1]).
"""

import re


def contains_answer(prompts, completions, answer, **kwargs):
    """1.0 when the completion's last number is the row's answer, -0.5 otherwise, -1 with no number."""
    scores = []
    for completion, gold in zip(completions, answer):
        numbers = re.findall(r"-?\d+", completion)
        scores.append(-1.0 if not numbers else (1.0 if numbers[-1] == str(gold) else -0.5))
    return scores


def answer_with_spans(prompts, completions, answer, **kwargs):
    """The same scores, plus +0.5 (right) or -0.5 (wrong) on the characters of the last number."""
    out = []
    for completion, gold, score in zip(completions, answer, contains_answer(prompts, completions, answer)):
        found = list(re.finditer(r"-?\d+", completion))
        spans = []
        if found:
            last = found[-1]
            spans.append({"start": last.start(), "end": last.end(), "reward": 0.5 if score > 0 else -0.5,
                          "label": "answer"})
        out.append({"score": score, "spans": spans, "metrics": {"numbers": float(len(found))}})
    return out


def brevity(completions, **kwargs):
    """A second reward to weigh in with reward.services: 1 for an empty text, falling to -1 at 1000 characters."""
    return [max(-1.0, 1.0 - len(c) / 500) for c in completions]
