"""Protocol v1's field checks: ids, versions, typed fields, numbers, spans, metrics, info, and the
request options a client may never set. They raise ProtocolError; codec.py applies them to lines."""

from __future__ import annotations

import ipaddress
import math
import re
from typing import Any

from botgrpo_rewards.protocol.wire import VERSION, ProtocolError, Span


def readable_id(obj: dict) -> Any:
    rid = obj.get("id")
    return rid if isinstance(rid, (str, int)) and not isinstance(rid, bool) else None


def check_version(obj: dict, rid: Any) -> None:
    v = obj.get("v", VERSION)
    if v != VERSION:
        raise ProtocolError(f"protocol version {v!r} is not supported (this side speaks v{VERSION})", rid, "version")


def is_loopback(host: str) -> bool:
    """Whether `host` (a name or an address) is this machine's loopback: what may go unencrypted and
    unauthenticated (a service bound there needs no token; a client sending a token there is not warned)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def refuse_open_bind(host: str, token: str | None, allow_without_token: bool, token_flag: str) -> None:
    """The one rule for a server botgrpo runs (`reward serve --http`, `vllm serve`): beyond loopback
    it needs a token, unless told to go without one; ValueError saying what to pass otherwise."""
    if token is None and not is_loopback(host) and not allow_without_token:
        raise ValueError(f"refusing to serve on {host} without a token: anyone who can reach it could use the "
                         f"service; pass {token_flag}, bind 127.0.0.1, or pass --allow-remote-without-token")
    if token is not None and not token.strip():
        raise ValueError("--token is empty; give a secret string")


def version_mismatch(who: str, theirs: Any) -> str:
    """One line naming both sides' protocol versions (a client meeting a service of another version)."""
    return (f"{who} speaks reward protocol version {theirs!r}; this botgrpo speaks version {VERSION}: run a "
            "service and a botgrpo of the same protocol version")


def typed_field(obj: dict, name: str, kind: type | tuple, rid: Any, default: Any = ..., what: str = "") -> Any:
    if name not in obj:
        if default is ...:
            raise ProtocolError(f"missing field '{name}'", rid)
        return default
    val = obj[name]
    if isinstance(val, bool) and kind is not bool and (kind is int or (isinstance(kind, tuple) and bool not in kind)):
        raise ProtocolError(f"field '{name}' must be {what or kind}, got a boolean", rid)
    if not isinstance(val, kind):
        raise ProtocolError(f"field '{name}' must be {what or getattr(kind, '__name__', kind)}, got {type(val).__name__}", rid)
    return val


# Option names (split at _ - .) and values a request may never send: a URL, a secret or a path the
# server reads or writes is the service's own setting (its flags or environment), or any client
# could redirect the server's credentials or write its files.
_SERVER_SETTING_WORDS = frozenset(
    "url urls uri endpoint host key apikey secret token password passwd credential credentials "
    "auth authorization cookie dir directory folder path file filename".split())
_URL_VALUE = re.compile(r"^\s*[A-Za-z][A-Za-z0-9+.-]*://")


def server_setting(options: dict, prefix: str = "") -> str | None:
    """The first option (dotted name) that names a URL, secret or server path, else None."""
    for name, value in options.items():
        dotted = f"{prefix}{name}"
        words = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", str(name)).lower()  # camelCase too
        if set(re.split(r"[_\-.\s]+", words)) & _SERVER_SETTING_WORDS:
            return dotted
        if isinstance(value, str) and _URL_VALUE.match(value):
            return dotted
        if isinstance(value, dict):
            found = server_setting(value, dotted + ".")
            if found:
                return found
    return None


def check_options(options: dict, rid: Any = None) -> None:
    """Refuse options that would let a request choose a URL, a secret or a server path."""
    name = server_setting(options)
    if name is not None:
        raise ProtocolError(
            f"option {name!r} names a URL, secret or server path; a request may not set those: they are the "
            "service's own settings (flags or environment of `botgrpo reward serve`, see the service's README)", rid)


def _finite(x: Any, name: str, rid: Any, lo: float = -math.inf, hi: float = math.inf) -> float:
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
        raise ProtocolError(f"{name} must be a finite number, got {x!r}", rid, "bad_response")
    if not lo <= x <= hi:
        raise ProtocolError(f"{name} = {x} is outside [{lo}, {hi}]", rid, "bad_response")
    return float(x)


def validate_spans(spans: list[Span], n_chars: int | None, rid: Any = None) -> list[Span]:
    """Check spans: integer offsets within the text, non-empty, sorted, non-overlapping, reward in [-1, 1]."""
    for s in spans:
        if not isinstance(s, Span):
            raise ProtocolError(f"each span must be a Span, got {type(s).__name__}", rid, "bad_response")
        if isinstance(s.start, bool) or isinstance(s.end, bool) or not isinstance(s.start, int) or not isinstance(s.end, int):
            raise ProtocolError("span offsets must be integers", rid, "bad_response")
    out = sorted(spans, key=lambda s: (s.start, s.end))
    prev_end = 0
    for s in out:
        if s.start < 0 or s.end <= s.start or (n_chars is not None and s.end > n_chars):
            raise ProtocolError(f"span [{s.start}, {s.end}) is empty or outside the completion ({n_chars} chars)", rid, "bad_response")
        if s.start < prev_end:
            raise ProtocolError(f"span [{s.start}, {s.end}) overlaps the previous span", rid, "bad_response")
        _finite(s.reward, "span reward", rid, -1.0, 1.0)
        prev_end = s.end
    return out


def validate_score(score: Any, rid: Any = None) -> float:
    """The sequence reward as a float; ProtocolError unless it is a finite number in [-1, 1]."""
    return _finite(score, "score", rid, -1.0, 1.0)


def validate_metrics(metrics: Any, rid: Any = None) -> dict[str, float]:
    """Metrics as {name: float}; ProtocolError unless it is an object of finite numbers."""
    if not isinstance(metrics, dict):
        raise ProtocolError("metrics must be an object", rid, "bad_response")
    return {str(k): _finite(v, f"metric {k}", rid) for k, v in metrics.items()}


def clean_info(info: Any) -> dict[str, Any]:
    """Info for people: keep strings and finite numbers, turn anything else into its str()."""
    if not isinstance(info, dict):
        return {}
    out: dict[str, Any] = {}
    for k, v in info.items():
        ok = isinstance(v, str) or (isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v))
        out[str(k)] = v if ok else str(v)
    return out

