"""Secrets out of everything a run writes (config.yaml, checkpoints, TensorBoard / W&B config).

A value is a secret when its key names one (`api_key`, `hf_token`, `password`, ...), when it is the
password part of a URL (`https://user:PASS@host`), or, in an argv list, when it follows a secret
flag (`--token X`, `--api-key=X`) or is a secret environment assignment (`HF_TOKEN=X`).
"""

from __future__ import annotations

import re
from typing import Any

REDACTED = "<redacted>"
_SECRET_WORDS = frozenset("key apikey token secret password passwd credential credentials auth authorization "
                          "cookie".split())
_URL_PASSWORD = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.-]*://[^/@:\s]*:)(?P<pw>[^/@\s]+)(?P<tail>@)")
_ASSIGNMENT = re.compile(r"^(?P<name>-{0,2}[A-Za-z_][A-Za-z0-9_-]*)=(?P<value>.*)$", re.S)


def is_secret_name(name: Any) -> bool:
    words = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", str(name)).lower()
    return bool(set(re.split(r"[^a-z0-9]+", words)) & _SECRET_WORDS)


def _string(text: str) -> str:
    return _URL_PASSWORD.sub(lambda m: m["head"] + REDACTED + m["tail"], text)


def _argv(items: list) -> list:
    out, hide_next = [], False
    for item in items:
        if hide_next:
            out.append(REDACTED)
            hide_next = False
            continue
        if isinstance(item, str):
            m = _ASSIGNMENT.match(item)
            if m and is_secret_name(m["name"]):
                out.append(f"{m['name']}={REDACTED}")
                continue
            hide_next = item.startswith("-") and is_secret_name(item)
        out.append(redact(item))
    return out


def redact(obj: Any) -> Any:
    """A copy of `obj` (dicts, lists, strings, numbers) with every secret replaced by REDACTED."""
    if isinstance(obj, dict):
        return {k: (REDACTED if is_secret_name(k) and v not in (None, "", {}, []) else redact(v)) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return _argv(list(obj))
    if isinstance(obj, str):
        return _string(obj)
    return obj
