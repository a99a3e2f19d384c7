"""The `vlm` judge: an OpenAI-compatible /v1/chat/completions client that rates screenshots.

Single mode asks for {"score": 0-10, "reason": "..."} about a candidate (and a reference when one
exists); pairwise mode asks which of two screenshots follows the instruction better. Replies are
parsed leniently (code fences, prose around the JSON), transient failures are retried with
exponential backoff inside the deadline, and verdicts are cached by (model, prompt, image hashes)
in one bounded cache the service shares across models.

What goes back to the requester names no address, key or server text: a failure is a generic
reason and the HTTP status. Redirects are never followed, so the key is only ever sent to the
configured address.
"""

from __future__ import annotations

import base64
import hashlib
import http.client
import json
import logging
import os
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Callable

from botgrpo_rewards.backend import BackendError, BackendTimeout
from botgrpo_rewards.lru import LRU

SINGLE_PROMPT = (
    "You judge a React UI component by its screenshot. Instruction the component was written for:\n"
    "{instruction}\n\nThe first image is the candidate's screenshot.{reference}\n"
    'Rate how well the candidate fulfils the instruction. Reply with JSON only: {{"score": <integer 0-10>, "reason": "<one sentence>"}}'
)
REFERENCE_NOTE = " The second image is a reference solution's screenshot, for comparison."
PAIR_PROMPT = (
    "You compare two React UI components by their screenshots. Instruction both were written for:\n"
    "{instruction}\n\nThe first image is component 1, the second is component 2. Which one fulfils the "
    'instruction better? Reply with JSON only: {{"winner": 1 | 2 | "tie", "reason": "<one sentence>"}}'
)
RETRY_STATUSES = {408, 409, 425, 429, 500, 502, 503, 504}
log = logging.getLogger("botgrpo_rewards.render")


class _RefuseRedirects(urllib.request.HTTPRedirectHandler):
    """A 3xx is answered as the HTTP error it is: following it would send the key (and the
    screenshots) to an address the service was not configured with."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


# No redirects; proxies from the environment as urllib's default opener has them.
_OPENER = urllib.request.build_opener(_RefuseRedirects)


@dataclass
class VlmConfig:
    """Where the model is served and how it is called (see `from_settings`)."""

    base_url: str
    model: str
    api_key: str = ""
    request_timeout_s: float = 60.0
    max_retries: int = 3
    backoff_s: float = 0.5
    max_tokens: int = 200

    @classmethod
    def from_settings(cls, options: dict, base_url: str | None = None, model: str | None = None) -> "VlmConfig":
        """The server's address and key are the service's settings (arguments, else BOTGRPO_VLM_BASE_URL,
        BOTGRPO_VLM_MODEL, BOTGRPO_VLM_API_KEY), never a request's; a request may pick the model name,
        the per-call timeout and the retries."""
        base = base_url or os.environ.get("BOTGRPO_VLM_BASE_URL")
        model = options.get("vlm_model") or model or os.environ.get("BOTGRPO_VLM_MODEL")
        if not base or not model:
            raise BackendError("the vlm judge needs a server: start the render service with BOTGRPO_VLM_BASE_URL "
                               "(e.g. http://127.0.0.1:8000/v1) and BOTGRPO_VLM_MODEL set", "bad_request")
        _check_base_url(base)
        if not isinstance(model, str):
            raise BackendError("option vlm_model must be a string", "bad_request")
        try:
            timeout, retries = float(options.get("vlm_timeout_s", 60.0)), int(options.get("vlm_max_retries", 3))
        except (TypeError, ValueError):
            raise BackendError("options vlm_timeout_s and vlm_max_retries must be numbers", "bad_request") from None
        if not 0 < timeout <= 600 or not 0 <= retries <= 10:
            raise BackendError("option vlm_timeout_s must be in (0, 600] and vlm_max_retries in [0, 10]", "bad_request")
        return cls(base_url=base, model=model, api_key=os.environ.get("BOTGRPO_VLM_API_KEY", ""),
                   request_timeout_s=timeout, max_retries=retries)

    @property
    def url(self) -> str:
        """The chat completions endpoint under base_url; a query (some servers take the key there) is kept."""
        parts = urllib.parse.urlsplit(self.base_url)
        path = parts.path.rstrip("/")
        path += "/chat/completions" if path.endswith("/v1") else "/v1/chat/completions"
        return urllib.parse.urlunsplit(parts._replace(path=path))


def _check_base_url(base: str) -> None:
    """Refuse a server address urllib cannot use safely; the message never repeats the address."""
    parts = urllib.parse.urlsplit(base)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise BackendError("BOTGRPO_VLM_BASE_URL must be an http:// or https:// address with a host", "backend")
    if parts.username is not None or parts.password is not None:
        raise BackendError("BOTGRPO_VLM_BASE_URL must not hold credentials (user:key@host); "
                           "put the key in BOTGRPO_VLM_API_KEY", "backend")


class MalformedReply(ValueError):
    """The model's reply holds no usable verdict (the message says why, never what the reply said)."""


def parse_json_object(text: str) -> dict:
    """The first JSON object in a model reply (fences and prose around it allowed)."""
    for match in re.finditer(r"\{", text):
        try:
            obj, _ = json.JSONDecoder().raw_decode(text[match.start():])
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict):
            return obj
    raise MalformedReply("no JSON object in the reply")


def parse_score(text: str) -> tuple[float, str]:
    """(score in [0, 1], reason) from a {"score": 0-10} reply."""
    obj = parse_json_object(text)
    raw = obj.get("score", obj.get("rating"))
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise MalformedReply("the reply has no numeric score") from None
    if value != value:  # NaN
        raise MalformedReply("reply score is NaN")
    return min(10.0, max(0.0, value)) / 10.0, str(obj.get("reason", ""))[:500]


def parse_winner(text: str) -> str:
    """'first', 'second' or 'tie' from a {"winner": 1 | 2 | "tie"} reply."""
    raw = str(parse_json_object(text).get("winner", "")).strip().lower()
    table = {"1": "first", "a": "first", "first": "first", "2": "second", "b": "second", "second": "second", "tie": "tie"}
    if raw not in table:
        raise MalformedReply("the reply names no winner")
    return table[raw]


def judge_pair(a: bytes, b: bytes, verdict: Callable[[bytes, bytes], str]) -> float:
    """A's win probability from asking `verdict` in both orders: 1 (A both times), 0 (B both
    times), else 0.5 — an order-dependent verdict is a tie. `verdict(first, second)` returns
    'first', 'second' or 'tie'."""
    forward = verdict(a, b)
    backward = verdict(b, a)
    if forward == "first" and backward == "second":
        return 1.0
    if forward == "second" and backward == "first":
        return 0.0
    return 0.5


def _image_part(png: bytes) -> dict:
    return {"type": "image_url", "image_url": {"url": "data:image/png;base64," + base64.b64encode(png).decode("ascii")}}


class VlmClient:
    """Thread-safe judge client. Cheap to make per request: all it keeps is `cache` (request hash ->
    parsed verdict), which the service passes in so that every model shares one bound."""

    def __init__(self, config: VlmConfig, cache: LRU | None = None):
        self.config = config
        self._cache = cache if cache is not None else LRU(10_000)

    def score(self, instruction: str, candidate: bytes, reference: bytes | None, deadline: float) -> tuple[float, str]:
        """(score in [0, 1], reason) for a candidate screenshot, optionally beside a reference."""
        prompt = SINGLE_PROMPT.format(instruction=instruction, reference=REFERENCE_NOTE if reference else "")
        images = [candidate] + ([reference] if reference else [])
        return self._cached(prompt, images, parse_score, deadline)

    def compare(self, instruction: str, first: bytes, second: bytes, deadline: float) -> str:
        """'first', 'second' or 'tie': which screenshot follows the instruction better."""
        return self._cached(PAIR_PROMPT.format(instruction=instruction), [first, second], parse_winner, deadline)

    def _cached(self, prompt: str, images: list[bytes], parse: Callable, deadline: float):
        parts = [self.config.url, self.config.model, prompt] + [hashlib.sha256(i).hexdigest() for i in images]
        key = hashlib.sha256("\0".join(parts).encode("utf-8", "surrogatepass")).hexdigest()
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        messages = [{"role": "user", "content": [{"type": "text", "text": prompt}] + [_image_part(i) for i in images]}]
        value = self._ask(messages, parse, deadline)
        self._cache.put(key, value)
        return value

    def _ask(self, messages: list, parse: Callable, deadline: float):
        """POST and parse, retrying transient failures and malformed replies with backoff."""
        last = "no attempt made"
        for attempt in range(self.config.max_retries + 1):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise BackendTimeout(f"vlm judge: deadline passed after {attempt} attempt(s) ({last})")
            try:
                return parse(self._post(messages, min(self.config.request_timeout_s, remaining)))
            except MalformedReply as err:
                last = str(err)
            except urllib.error.HTTPError as err:
                _log_reply(err)
                err.close()
                if err.code not in RETRY_STATUSES:
                    hint = " (a redirect, not followed: set BOTGRPO_VLM_BASE_URL to the final address)" if 300 <= err.code < 400 else ""
                    raise BackendError(f"vlm judge: the server answered HTTP {err.code}{hint}") from None
                last = f"HTTP {err.code}"
            except (urllib.error.URLError, http.client.HTTPException, OSError) as err:
                last = _failure(err)
            pause = self.config.backoff_s * 2**attempt
            if time.monotonic() + pause >= deadline:
                raise BackendTimeout(f"vlm judge: deadline passed after {attempt + 1} attempt(s) ({last})")
            time.sleep(pause)
        raise BackendError(f"vlm judge: gave up after {self.config.max_retries + 1} attempts ({last})")

    def _post(self, messages: list, timeout: float) -> str:
        body = {"model": self.config.model, "messages": messages, "temperature": 0, "max_tokens": self.config.max_tokens}
        headers = {"Content-Type": "application/json"}
        if self.config.api_key:
            headers["Authorization"] = f"Bearer {self.config.api_key}"
        req = urllib.request.Request(self.config.url, data=json.dumps(body).encode(), headers=headers, method="POST")
        with _OPENER.open(req, timeout=timeout) as resp:
            raw = resp.read()
        try:
            payload = json.loads(raw)
        except ValueError:
            raise MalformedReply("the server's reply is not JSON") from None
        try:
            content = payload["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise MalformedReply("the server's reply is not a chat completion") from None
        if isinstance(content, list):  # some servers return content parts
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        return str(content or "")


def _failure(err: Exception) -> str:
    """A transport failure in words that name no address (urllib's messages can)."""
    reason = err.reason if isinstance(err, urllib.error.URLError) else err
    if isinstance(reason, TimeoutError):
        return "timed out"
    return f"connection failed ({type(reason).__name__})" if isinstance(reason, BaseException) else "connection failed"


def _log_reply(err: urllib.error.HTTPError) -> None:
    """The server's error body is for the operator's log (debug level), never the requester."""
    if log.isEnabledFor(logging.DEBUG):
        try:
            body = err.read(300)
        except OSError:
            body = b""
        log.debug("vlm judge: HTTP %d, body %r", err.code, body)
