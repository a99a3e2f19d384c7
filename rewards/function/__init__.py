"""The `function` reward service: a user's Python reward function behind protocol v1.

`python -m botgrpo_rewards function --function MODULE:NAME` (or `path/to/file.py:NAME`). The
function is called in batches the way TRL calls its reward functions,
`fn(prompts=[...], completions=[...], **columns)` (each reference key a keyword list), and returns
one item per completion: a number (the score), None (not scorable: masked like a failed score), or
a dict `{score, spans: [{start, end, reward, label?}], metrics, info}` in the protocol's units.

The function runs in a child process of the service (worker.py), so an exception costs its batch
(status error), a hang costs its batch (status timeout; the child is killed and started again), and
neither costs the service or the run. Model text only ever reaches the function as data.
"""
