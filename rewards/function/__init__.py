"""A user's Python reward function, called as TRL calls one.

`fn(prompts=[...], completions=[...], completion_ids=..., trainer_state=..., log_metric=...,
log_extra=..., **columns)` on a batch (each reference key a keyword list) returns one item per
completion: a number (the score), None (not scored by this function), or a dict
`{score, spans: [{start, end, reward}], metrics, info}` in the protocol's units.

The function runs in a child process (protocol/function_worker.py; protocol/forked.py for a Python callable), so an exception
costs its batch (status error), a hang costs its batch (status timeout; the child is killed and
started again), and neither costs the caller. The trainer calls it through the client's
FunctionPool (TRL's whole batches and combination of several functions); `python -m
botgrpo_rewards function --function MODULE:NAME` serves it behind protocol v1 (service.py). Model
text only ever reaches the function as data.
"""
