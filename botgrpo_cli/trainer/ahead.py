"""Where a training step's rollouts come from: generated in turn with the update (rollout.max_staleness
= 0), or by a producer thread that generates and scores the next batches while the trainer updates,
each from weights at most max_staleness optimizer steps older than the policy that trains on it.

The producer waits rather than sample past the bound (as OpenRLHF's queue one batch deep does), so
no finished batch is ever too stale to train and none is dropped; a batch's seed stays a function of
(run seed, step) and the prompts are drawn in step order, so the batches are today's prompts and
seeds, sampled from older weights. Batches generated ahead are lost on a stop and regenerated on
--resume (from the resumed weights, so their tokens may differ).
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Iterator

from botgrpo_cli.trainer.logprobs import batch_logps
from botgrpo_cli.trainer.rollouts import Rollouts, collect_rollouts


def staleness(step: int, batch_version: int) -> int:
    """Optimizer steps between the weights that sampled a batch and the policy step `step` updates
    (it has taken step - 1 steps)."""
    return step - 1 - batch_version


class InTurn:
    """Today's loop: the step's batch is generated when the step asks, from the current weights."""

    def __init__(self, s):
        self.s, self.position = s, s.stream.position

    def take(self, step: int) -> Rollouts:
        ro = collect_rollouts(self.s, step)
        ro.batch.policy_version, ro.position = step - 1, self.s.stream.position
        self.position = ro.position
        if self.s.turns is not None:
            ro.turn_stats = self.s.turns.take_stats()
        return ro

    @contextlib.contextmanager
    def updating(self) -> Iterator[None]:
        yield
        self.s.engine.sync_weights()

    def exclusive(self) -> contextlib.AbstractContextManager:
        return contextlib.nullcontext()

    def step_metrics(self, step: int, ro: Rollouts) -> dict[str, float]:
        return {}

    def close(self) -> None:
        return None


class Ahead:
    """A producer thread generating steps first .. last ahead of the trainer within `bound` steps."""

    def __init__(self, s, first: int, last: int, bound: int):
        self.s, self.bound = s, bound
        self.version = first - 1  # optimizer steps the trainer's policy has taken
        self.position = s.stream.position
        self.pulled = first - 1  # the version the engine holds (the session synced it at start)
        self.ready: dict[int, Rollouts] = {}
        self.cond = threading.Condition()
        self.weights = threading.Lock()  # the trainer holds it while the update changes the weights
        self.engine = threading.Lock()  # generation and evaluation take turns on the engine
        self.error: BaseException | None = None
        self.closed = False
        self.generator_idle = 0.0  # seconds the producer waited for the bound, not yet reported
        self.trainer_idle = 0.0
        self.seen: list[int] = []  # each trained batch's staleness
        self.thread = threading.Thread(target=self._run, args=(first, last), daemon=True, name="botgrpo-rollouts")
        self.thread.start()

    # ------------------------------------------------------------------ the producer thread

    def _run(self, first: int, last: int) -> None:
        try:
            with self.s.precision():  # autocast is per thread
                for step in range(first, last + 1):
                    started = time.perf_counter()
                    with self.cond:
                        self.cond.wait_for(lambda: self.closed or self.version >= step - 1 - self.bound)
                        self.generator_idle += time.perf_counter() - started
                        if self.closed:
                            return
                    ro = self._generate(step)
                    with self.cond:
                        self.ready[step] = ro
                        self.cond.notify_all()
        except BaseException as err:  # noqa: BLE001 - handed to the trainer, which raises it
            with self.cond:
                self.error = err
                self.cond.notify_all()

    def _generate(self, step: int) -> Rollouts:
        with self.engine:
            self._pull()
            started = time.perf_counter()
            ro = collect_rollouts(self.s, step)
            ro.seconds_generating = time.perf_counter() - started
            b = ro.batch
            b.policy_version, ro.position = self.pulled, self.s.stream.position
            if self.s.turns is not None:
                ro.turn_stats = self.s.turns.take_stats()
            copy = getattr(self.s.engine, "source", None) is not None
            if copy and staleness(step, b.policy_version) > 0:
                # the behaviour log-probs: the sampling copy's, before it is refreshed
                cfg = self.s.cfg
                b.logp_old = batch_logps(self.s.engine.model, b.prompt_ids, b.completion_ids, b.mask,
                                         self.s.engine.pad_id, cfg.rollout.temperature, cfg.optim.micro_batch_size)
            return ro

    def _pull(self) -> None:
        """Push the trainer's weights to the engine when they moved since the last push (call holding
        self.engine). Under self.weights, no update is running: the weights are self.version's."""
        with self.weights:
            if self.version != self.pulled:
                self.s.engine.sync_weights()
                self.pulled = self.version

    # ------------------------------------------------------------------ the trainer's side

    def take(self, step: int) -> Rollouts:
        started = time.perf_counter()
        with self.cond:
            self.cond.wait_for(lambda: step in self.ready or self.error is not None)
            if step not in self.ready:
                raise self.error  # the producer's failure, in the training thread
            ro = self.ready.pop(step)
        self.position = ro.position  # prompts drawn through this step, not through the ones generated ahead
        self.trainer_idle = time.perf_counter() - started
        return ro

    @contextlib.contextmanager
    def updating(self) -> Iterator[None]:
        """Around the update: the producer pushes no weights while they change; after it, the new
        version is published (the producer pushes it before its next batch)."""
        with self.weights:
            yield
            with self.cond:
                self.version += 1
                self.cond.notify_all()

    @contextlib.contextmanager
    def exclusive(self) -> Iterator[None]:
        """The engine for the trainer (a held-out evaluation), holding the current weights."""
        with self.engine:
            self._pull()
            yield

    def step_metrics(self, step: int, ro: Rollouts) -> dict[str, float]:
        self.seen.append(staleness(step, ro.batch.policy_version))
        with self.cond:
            idle, self.generator_idle = self.generator_idle, 0.0
        return {"async/staleness": float(self.seen[-1]), "async/staleness_mean": sum(self.seen) / len(self.seen),
                "async/staleness_max": float(max(self.seen)), "async/generator_idle_s": idle,
                "async/trainer_idle_s": self.trainer_idle, "async/dropped": 0.0,
                "async/generate_s": ro.seconds_generating,
                # the producer's own decode time: the step's "generate" time is only the wait for it
                "perf/tokens_per_s": int(ro.batch.mask.sum()) / max(ro.seconds_generating, 1e-9)}

    def close(self) -> None:
        """Stop the producer after its current batch (waited for a while; the thread is a daemon), then
        leave the engine holding the trainer's last weights (the final evaluation samples from it)."""
        with self.cond:
            self.closed = True
            self.cond.notify_all()
        self.thread.join(timeout=30.0)
        if not self.thread.is_alive() and self.error is None:
            with self.engine:
                self._pull()


def rollout_source(s, first: int, last: int) -> InTurn | Ahead:
    bound = s.cfg.rollout.max_staleness
    return InTurn(s) if bound == 0 or first > last else Ahead(s, first, last, bound)
