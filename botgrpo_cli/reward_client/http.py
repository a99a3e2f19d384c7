"""HttpRewardClient: the same protocol against a service started with `--http HOST:PORT`.

What it trusts of an endpoint: nothing it can check. Each call has one deadline for the whole
exchange (connect, send, every byte of the answer): an endpoint that trickles its answer a byte at a
time fails at the deadline like one that never answers. Answers are matched to requests by id (each
request goes out under an id unique to this client): an answer for an id that was not sent is
dropped and counted (`stray_answers`), and a request left unanswered or answered twice gets an
`error` answer of its own (`bad_response`), never another request's reward. URLs are shown without
their user info; credentials in one (`http://user:PASS@host`) are sent as HTTP Basic auth when no
bearer token is set, and a credential sent in clear text beyond loopback is warned about once.
"""

from __future__ import annotations

import base64
import functools
import http.client
import itertools
import json
import logging
import os
import socket
import threading
import time
import urllib.parse
from typing import Any, Callable, Iterable

from botgrpo_cli.errors import UserError
from botgrpo_cli.redact import public_url
from botgrpo_rewards.protocol import (MAX_LINE_BYTES, TOKEN_ENV, Hello, ProtocolError, ScoreRequest, ScoreResponse,
                                      decode_message, error_response, is_loopback, response_from_json,
                                      version_mismatch)

log = logging.getLogger("botgrpo.reward_client")


class EndpointError(UserError):
    """A call to the service failed: `status` is the HTTP status, None when it could not be reached
    (refused, reset, timed out) or answered something that is not the protocol."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status


MAX_IDLE_CONNECTIONS = 8  # kept open for reuse; more threads at once still work (extra ones are closed after use)
_STALE = (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError, ConnectionAbortedError)
_wire_ids = itertools.count()  # ids requests travel under (as strings, what every server can hold): unique in
# this process, so no answer fits two requests
_warned_clear_text: set[str] = set()
_warned_lock = threading.Lock()


class _TooLarge(Exception):
    """An answer longer than any the protocol allows for the call: a broken or hostile endpoint."""


class _Cutoff:
    """The deadline of one exchange: when it passes, the connection's socket is shut down, so a read
    blocked on a trickling endpoint returns at once (a per-read timeout would wait forever)."""

    def __init__(self, conn: http.client.HTTPConnection, seconds: float):
        self.conn = conn
        self.fired = False
        self._over = False
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._fire)
        self._timer.daemon = True
        self._timer.start()

    def _fire(self) -> None:
        with self._lock:
            if self._over:
                return
            self.fired = True
            sock = self.conn.sock
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def cancel(self) -> None:
        with self._lock:
            self._over = True
        self._timer.cancel()


class HttpRewardClient:
    """Score requests over HTTP. Requests go in batches of `batch_size` per POST, over keep-alive
    connections from a small pool (thread-safe: each call takes its own connection)."""

    def __init__(self, base_url: str, timeout_s: float = 600.0, batch_size: int = 64, token: str | None = None):
        """token: the service's bearer token (default $BOTGRPO_REWARD_TOKEN; none when unset).
        timeout_s: the deadline of one call, the whole exchange (a batch may ask for more: score_batch)."""
        self.base_url = public_url(base_url.rstrip("/"))  # what messages show: no user info
        self.timeout_s = timeout_s
        self.batch_size = batch_size
        self.stray_answers = 0  # answers for ids this client never sent (dropped)
        self._token = token if token is not None else os.environ.get(TOKEN_ENV) or None
        url = urllib.parse.urlsplit(base_url.rstrip("/"))
        try:
            port = url.port
        except ValueError:
            port = -1
        if url.scheme not in ("http", "https") or not url.hostname or port == -1:
            raise UserError(f"reward service URL {public_url(base_url)!r} is not http://HOST:PORT (e.g. "
                            "http://127.0.0.1:8100)")
        self._auth = (f"Bearer {self._token}" if self._token else
                      "Basic " + base64.b64encode(f"{urllib.parse.unquote(url.username or '')}:"
                                                  f"{urllib.parse.unquote(url.password or '')}".encode()).decode()
                      if url.username or url.password else None)
        self._clear_text = url.scheme == "http" and not is_loopback(url.hostname)
        self._connect = functools.partial(http.client.HTTPSConnection if url.scheme == "https" else http.client.HTTPConnection,
                                          url.hostname, port, timeout=timeout_s)
        self._prefix = url.path
        self._idle: list[http.client.HTTPConnection] = []
        self._lock = threading.Lock()

    def _warn_clear_text(self) -> None:
        """Once per endpoint and process: a credential is about to travel unencrypted."""
        with _warned_lock:
            if self.base_url in _warned_clear_text:
                return
            _warned_clear_text.add(self.base_url)
        log.warning("credentials for the reward service at %s travel in clear text (http:// to another machine); "
                    "use https:// or an SSH tunnel to 127.0.0.1", self.base_url)

    def close(self) -> None:
        """Close the idle connections (a later call opens new ones)."""
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()

    def _take(self) -> tuple[http.client.HTTPConnection, bool]:
        """A connection and whether it has served a request before (so the server may have closed it)."""
        with self._lock:
            if self._idle:
                return self._idle.pop(), True
        return self._connect(), False

    def _give_back(self, conn: http.client.HTTPConnection) -> None:
        with self._lock:
            if conn.sock is not None and len(self._idle) < MAX_IDLE_CONNECTIONS:
                self._idle.append(conn)
                return
        conn.close()

    def _exchange(self, method: str, path: str, data: bytes | None, headers: dict, deadline: float,
                  max_bytes: int) -> tuple[int, bytes]:
        """(status, body) of one request, all of it before `deadline` (time.monotonic()), else
        TimeoutError; a body over `max_bytes` is not read (_TooLarge). A kept-alive connection the
        server has closed meanwhile (its idle timeout) is retried once on a new one: scoring is a
        pure function of the request."""
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no complete answer before the deadline")
            conn, reused = self._take()
            conn.timeout = left  # bounds the connect, and each read until the cutoff fires
            if conn.sock is not None:
                conn.sock.settimeout(left)
            cutoff = _Cutoff(conn, left)
            try:
                conn.request(method, self._prefix + path, body=data, headers=headers)
                resp = conn.getresponse()
                body = resp.read(max_bytes + 1)
                if len(body) > max_bytes:
                    raise _TooLarge(f"an answer over {max_bytes:,} bytes")
            except BaseException as err:
                cutoff.cancel()
                conn.close()
                if cutoff.fired or isinstance(err, TimeoutError):
                    raise TimeoutError(f"no complete answer within {left:.1f} s") from None
                if isinstance(err, _STALE) and reused:
                    continue
                raise
            cutoff.cancel()
            if cutoff.fired:  # the whole body came in as the cutoff shut the socket: usable, the socket not
                conn.close()
            else:
                self._give_back(conn)  # http.client has closed it already if the server said so
            return resp.status, body

    def _call(self, path: str, body: Any = None, timeout_s: float | None = None, max_bytes: int = 1_000_000) -> Any:
        data = None if body is None else json.dumps(body, ensure_ascii=True, allow_nan=False).encode()
        headers = {"Content-Type": "application/json"}
        if self._auth:
            headers["Authorization"] = self._auth
            if self._clear_text:
                self._warn_clear_text()
        deadline = time.monotonic() + (self.timeout_s if timeout_s is None else timeout_s)
        try:
            status, payload = self._exchange("GET" if data is None else "POST", path, data, headers, deadline,
                                             max_bytes)
        except _TooLarge as err:
            raise EndpointError(f"reward service at {self.base_url} sent {err} to {path}; not read") from None
        except TimeoutError as err:
            raise EndpointError(f"reward service at {self.base_url} did not answer {path} in time ({err})") from None
        except (OSError, http.client.HTTPException) as err:
            raise EndpointError(f"cannot reach the reward service at {self.base_url} ({err}); is `botgrpo reward serve NAME --http ...` running?") from None
        if status != 200:
            hint = f" (set {TOKEN_ENV} to the service's --token)" if status == 401 else ""
            raise EndpointError(f"reward service at {self.base_url} answered {path} with HTTP {status}{hint}: {payload[:300]!r}", status)
        try:
            return json.loads(payload)
        except ValueError:
            raise EndpointError(f"reward service at {self.base_url} answered {path} with something that is not JSON: {payload[:300]!r}") from None

    def health(self) -> dict:
        return self._call("/v1/health")

    def info(self) -> Hello:
        obj = self._call("/v1/info")
        try:
            hello = decode_message(json.dumps(obj))
        except ProtocolError as err:
            if err.type == "version":
                raise UserError(version_mismatch(f"the reward service at {self.base_url}", obj.get("v"))) from None
            raise UserError(f"{self.base_url}/v1/info broke the protocol ({err})") from None
        if not isinstance(hello, Hello):
            raise UserError(f"{self.base_url}/v1/info did not return a hello object")
        return hello

    def score(self, requests: Iterable[ScoreRequest], progress: Callable[[ScoreResponse], None] | None = None) -> list[ScoreResponse]:
        """Score many requests; responses in input order, one per request."""
        reqs = list(requests)
        out: list[ScoreResponse] = []
        for i in range(0, len(reqs), self.batch_size):
            for resp in self.score_batch(reqs[i : i + self.batch_size]):
                out.append(resp)
                if progress is not None:
                    progress(resp)
        return out

    def score_batch(self, batch: list[ScoreRequest], timeout_s: float | None = None) -> list[ScoreResponse]:
        """One POST of `batch`; one response per request, in order, each matched to its request by id
        (see the module docstring). `timeout_s`: the deadline of the whole call (default: the
        client's). EndpointError when the call fails."""
        wire_ids = [str(next(_wire_ids)) for _ in batch]
        reply = self._call("/v1/score", {"requests": [dict(r.to_json(), id=w) for r, w in zip(batch, wire_ids)]},
                           timeout_s, max_bytes=len(batch) * MAX_LINE_BYTES)  # each answer within a line's cap
        answers = reply.get("responses") if isinstance(reply, dict) else None
        if not isinstance(answers, list):
            raise EndpointError(f"reward service at {self.base_url} answered /v1/score without a responses list")
        sent = set(wire_ids)
        found: dict[str, Any] = {}
        twice: set[str] = set()
        stray = 0
        for obj in answers:
            wid = obj.get("id") if isinstance(obj, dict) else None
            if not isinstance(wid, str) or wid not in sent:
                stray += 1
            elif wid in found:
                twice.add(wid)
            else:
                found[wid] = obj
        if stray:
            with self._lock:
                self.stray_answers += stray
            log.warning("reward service at %s sent %d answer(s) for ids it was not asked about; dropped",
                        self.base_url, stray)
        return [self._matched(req, found.get(wid), wid in twice) for req, wid in zip(batch, wire_ids)]

    def _matched(self, req: ScoreRequest, obj: Any, twice: bool) -> ScoreResponse:
        if twice:
            resp = error_response(req.id, "bad_response", "the reward service answered this request twice")
        elif obj is None:
            resp = error_response(req.id, "bad_response", "the reward service's answer left this request out")
        else:
            try:
                resp = response_from_json(obj, len(req.completion))
            except ProtocolError as err:
                resp = error_response(req.id, "bad_response", f"reward service broke the protocol: {err}")
        resp.id = req.id
        return resp

