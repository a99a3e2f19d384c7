"""Score completions with a botgrpo reward service on behalf of another trainer (TRL, verl).

Framework-free: this module imports neither TRL nor verl, so both adapters share it.
"""

from __future__ import annotations

import atexit
import threading
from typing import Any, Sequence

from botgrpo_cli.errors import UserError
from botgrpo_cli.reward_client.scored import Scored
from botgrpo_rewards.protocol import DEFAULT_DEADLINE_MS, ScoreRequest


class ServiceScorer:
    """A reward service client started on first use: a local `RewardPool` of `workers` processes of
    `service`, or a `RemotePool` on `url` (a service started with `--http`: answers matched by id,
    one deadline per call, a failed call sent again)."""

    def __init__(self, service: str, *, workers: int = 1, url: str | None = None, options: dict | None = None,
                 deadline_ms: int = DEFAULT_DEADLINE_MS, command: list[str] | None = None,
                 env: dict[str, str] | None = None):
        if workers < 1:
            raise UserError(f"workers={workers} is not valid; use 1 or more reward service processes")
        self.service, self.workers, self.url = service, workers, url
        self.options = dict(options or {})
        self.deadline_ms = deadline_ms
        self._command, self._env = command, env
        self._client: Any = None
        self._lock = threading.Lock()

    @property
    def client(self) -> Any:
        with self._lock:
            if self._client is None:
                self._client = self._start()
            return self._client

    def _start(self) -> Any:
        if self.url is not None:
            from botgrpo_cli.reward_client.remote import RemotePool

            return RemotePool([self.url], deadline_ms=self.deadline_ms)
        from botgrpo_cli.reward_client import RewardPool

        pool = RewardPool(self.service, workers=self.workers, command=self._command, env=self._env)
        atexit.register(pool.close)  # service processes end with the trainer even without close()
        return pool

    def score(self, prompts: Sequence[str], texts: Sequence[str], references: Sequence[dict]) -> Scored:
        """Score each completion text (same order); never raises per item."""
        requests = [ScoreRequest(id=str(i), completion=text, prompt=prompt, reference=ref,
                                 options=self.options, deadline_ms=self.deadline_ms)
                    for i, (prompt, text, ref) in enumerate(zip(prompts, texts, references, strict=True))]
        return Scored(self.client.score(requests), list(texts))

    def close(self) -> None:
        """Stop the service processes (a later call starts them again)."""
        with self._lock:
            client, self._client = self._client, None
        if client is not None and hasattr(client, "close"):
            client.close()

    def __enter__(self) -> "ServiceScorer":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def references(columns: dict[str, Sequence[Any]], n: int, names: Sequence[str] | None) -> list[dict]:
    """Per-row `reference` objects from dataset columns.

    names given: those columns. Else a column named `reference` holding dicts is used as is; else
    every column becomes a reference field (math reads `answer`, react `spec`).
    """
    if names is not None:
        missing = [c for c in names if c not in columns]
        if missing:
            raise UserError(f"reference column(s) {', '.join(missing)} are not in the dataset; it has: "
                            f"{', '.join(sorted(columns)) or 'no extra columns'}")
        return [{c: columns[c][i] for c in names} for i in range(n)]
    if "reference" in columns:
        return [dict(columns["reference"][i] or {}) for i in range(n)]
    return [{c: values[i] for c, values in columns.items()} for i in range(n)]
