"""Secrets out of everything a run writes (config.yaml, checkpoints, TensorBoard / W&B config).

A value is a secret when its key names one (`api_key`, `hf_token`, `password`, ...); inside any
string, when it is the userinfo of a URL (`https://user:PASS@host`, `https://TOKEN@host`), a secret
query parameter (`?api_key=X`, `&sig=X`), the value of a secret header (`Authorization: Bearer X`),
a bearer credential, the value after a secret flag (`--token X`, `--api-key=X`, also inside a
shell string such as `sh -c '... --token X'`) or a secret environment assignment (`HF_TOKEN=X`);
and, in an argv list, the item after a secret flag. `public_url` shows a URL without its user info.
"""

from __future__ import annotations

import re
from typing import Any

REDACTED = "<redacted>"
_SECRET_WORDS = frozenset("key apikey token secret password passwd pwd credential credentials auth authorization "
                          "cookie sig signature jwt session".split())
_USERINFO = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.-]*://)(?P<info>[^/?#\s'\"]+)@")  # to the last @: a password may hold one
_QUERY = re.compile(r"(?P<head>[?&;](?P<name>[A-Za-z0-9_.%-]+)=)(?P<value>[^&#\s'\"]+)")
_HEADER = re.compile(r"(?P<head>\b(?P<name>[A-Za-z][A-Za-z0-9_-]*)\s*:[ \t]*)(?P<value>[^\s'\"][^\r\n'\"]*)")
_BEARER = re.compile(r"(?P<head>\bBearer\s+)(?P<value>[A-Za-z0-9._~+/=-]{4,})")  # other schemes: via their header
_FLAG = re.compile(r"(?P<head>(?<![\w-])(?P<name>--?[A-Za-z][A-Za-z0-9_-]*)(?:=|\s+))(?P<value>'[^']*'|\"[^\"]*\"|[^\s'\"]+)")
_ENV = re.compile(r"(?P<head>(?<![\w-])(?P<name>[A-Za-z_][A-Za-z0-9_]*)=)(?P<value>'[^']*'|\"[^\"]*\"|[^\s'\"&;]+)")
_ASSIGNMENT = re.compile(r"^(?P<name>-{0,2}[A-Za-z_][A-Za-z0-9_-]*)=(?P<value>.*)$", re.S)


def is_secret_name(name: Any) -> bool:
    words = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", str(name)).lower()
    return bool(set(re.split(r"[^a-z0-9]+", words)) & _SECRET_WORDS)


def _hide_when_secret(match: re.Match) -> str:
    """`head` + REDACTED when the match's `name` names a secret; else the match, a quoted value
    searched in turn (`sh -c '... --token X'`: the quote belongs to `-c`)."""
    value = match["value"]
    if value.startswith(REDACTED):  # hidden by an earlier pattern
        return match[0]
    if is_secret_name(match["name"]):
        return match["head"] + REDACTED
    if len(value) >= 2 and value[0] in "'\"" and value[-1] == value[0]:
        return match["head"] + value[0] + _string(value[1:-1]) + value[0]
    return match[0]


def _hide_userinfo(match: re.Match) -> str:
    user, sep, _ = match["info"].partition(":")
    return match["head"] + (f"{user}:{REDACTED}" if sep else REDACTED) + "@"


def public_url(text: str) -> str:
    """`text` with the user info taken out of every URL in it (`http://user:PASS@host:1/x` ->
    `http://host:1/x`): how a URL is shown in messages, logs and reports."""
    return _USERINFO.sub(lambda m: m["head"], text)


def _string(text: str) -> str:
    text = _USERINFO.sub(_hide_userinfo, text)
    text = _QUERY.sub(_hide_when_secret, text)
    text = _BEARER.sub(lambda m: m["head"] + REDACTED, text)
    text = _HEADER.sub(_hide_when_secret, text)
    text = _FLAG.sub(_hide_when_secret, text)
    return _ENV.sub(_hide_when_secret, text)


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
