"""HttpRewardClient: the same protocol against a service started with `--http HOST:PORT`."""

from __future__ import annotations

import functools
import http.client
import json
import os
import threading
import urllib.parse
from typing import Any, Callable, Iterable

from botgrpo_cli.errors import UserError
from botgrpo_rewards.protocol import (TOKEN_ENV, Hello, ProtocolError, ScoreRequest, ScoreResponse, decode_message,
                                      error_response, response_from_json)


class EndpointError(UserError):
    """A call to the service failed: `status` is the HTTP status, None when it could not be reached
    (refused, reset, timed out) or answered something that is not the protocol."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status


MAX_IDLE_CONNECTIONS = 8  # kept open for reuse; more threads at once still work (extra ones are closed after use)
_STALE = (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError, ConnectionAbortedError)


class HttpRewardClient:
    """Score requests over HTTP. Requests go in batches of `batch_size` per POST, over keep-alive
    connections from a small pool (thread-safe: each call takes its own connection)."""

    def __init__(self, base_url: str, timeout_s: float = 600.0, batch_size: int = 64, token: str | None = None):
        """token: the service's bearer token (default $BOTGRPO_REWARD_TOKEN; none when unset)."""
        self.base_url = base_url.rstrip("/")
        self.timeout_s = timeout_s
        self.batch_size = batch_size
        self._token = token if token is not None else os.environ.get(TOKEN_ENV) or None
        url = urllib.parse.urlsplit(self.base_url)
        try:
            port = url.port
        except ValueError:
            port = -1
        if url.scheme not in ("http", "https") or not url.hostname or port == -1:
            raise UserError(f"reward service URL {base_url!r} is not http://HOST:PORT (e.g. http://127.0.0.1:8100)")
        self._connect = functools.partial(http.client.HTTPSConnection if url.scheme == "https" else http.client.HTTPConnection,
                                          url.hostname, port, timeout=timeout_s)
        self._prefix = url.path
        self._idle: list[http.client.HTTPConnection] = []
        self._lock = threading.Lock()

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

    def _exchange(self, method: str, path: str, data: bytes | None, headers: dict) -> tuple[int, bytes]:
        """(status, body) of one request. A kept-alive connection the server has closed meanwhile
        (its idle timeout) is retried once on a new one: scoring is a pure function of the request."""
        while True:
            conn, reused = self._take()
            try:
                conn.request(method, self._prefix + path, body=data, headers=headers)
                resp = conn.getresponse()
                body = resp.read()
            except _STALE:
                conn.close()
                if reused:
                    continue
                raise
            except BaseException:
                conn.close()
                raise
            self._give_back(conn)  # http.client has closed it already if the server said so
            return resp.status, body

    def _call(self, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body, ensure_ascii=True, allow_nan=False).encode()
        headers = {"Content-Type": "application/json"}
        if self._token:
            headers["Authorization"] = f"Bearer {self._token}"
        try:
            status, payload = self._exchange("GET" if data is None else "POST", path, data, headers)
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
        hello = decode_message(json.dumps(self._call("/v1/info")))
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

    def score_batch(self, batch: list[ScoreRequest]) -> list[ScoreResponse]:
        """One POST of `batch`; one response per request, in order. EndpointError when the call fails."""
        answers = self._call("/v1/score", {"requests": [r.to_json() for r in batch]}).get("responses", [])
        if not isinstance(answers, list) or len(answers) != len(batch):
            raise EndpointError(f"reward service at {self.base_url} returned {len(answers)} responses for {len(batch)} requests")
        out = []
        for req, obj in zip(batch, answers):
            try:
                resp = response_from_json(obj, len(req.completion))
            except ProtocolError as err:
                resp = error_response(req.id, "bad_response", f"reward service broke the protocol: {err}")
            resp.id = req.id
            out.append(resp)
        return out
