"""HttpRewardClient: the same protocol against a service started with `--http HOST:PORT`."""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from typing import Any, Callable, Iterable

from botgrpo_cli.errors import UserError
from botgrpo_rewards.http_server import TOKEN_ENV
from botgrpo_rewards.protocol import Hello, ProtocolError, ScoreRequest, ScoreResponse, decode_message, error_response, response_from_json


class HttpRewardClient:
    """Score requests over HTTP. Requests go in batches of `batch_size` per POST."""

    def __init__(self, base_url: str, timeout_s: float = 600.0, batch_size: int = 64, token: str | None = None):
        """token: the service's bearer token (default $BOTGRPO_REWARD_TOKEN; none when unset)."""
        self.base_url = base_url.rstrip("/")
        self.timeout_s = timeout_s
        self.batch_size = batch_size
        self._token = token if token is not None else os.environ.get(TOKEN_ENV) or None

    def _call(self, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body, ensure_ascii=True, allow_nan=False).encode()
        headers = {"Content-Type": "application/json"}
        if self._token:
            headers["Authorization"] = f"Bearer {self._token}"
        req = urllib.request.Request(self.base_url + path, data=data, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:
                return json.loads(resp.read())
        except urllib.error.HTTPError as err:
            hint = f" (set {TOKEN_ENV} to the service's --token)" if err.code == 401 else ""
            raise UserError(f"reward service at {self.base_url} answered {path} with HTTP {err.code}{hint}: {err.read()[:300]!r}") from None
        except (urllib.error.URLError, OSError) as err:
            raise UserError(f"cannot reach the reward service at {self.base_url} ({err}); is `botgrpo reward serve NAME --http ...` running?") from None

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
            batch = reqs[i : i + self.batch_size]
            answers = self._call("/v1/score", {"requests": [r.to_json() for r in batch]}).get("responses", [])
            if len(answers) != len(batch):
                raise UserError(f"reward service at {self.base_url} returned {len(answers)} responses for {len(batch)} requests")
            for req, obj in zip(batch, answers):
                try:
                    resp = response_from_json(obj, len(req.completion))
                except ProtocolError as err:
                    resp = error_response(req.id, "bad_response", f"reward service broke the protocol: {err}")
                resp.id = req.id
                out.append(resp)
                if progress is not None:
                    progress(resp)
        return out
