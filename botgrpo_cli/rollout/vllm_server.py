"""Generation by a vLLM engine in another process (`rollout.engine=vllm_server`, `rollout.vllm_url`),
started with `botgrpo vllm serve MODEL`.

The server holds one engine and answers three requests: GET /health, POST /generate (rows of prompt
token ids, their seeds and the sampling options; returns each row's tokens and log-probs, sampled by
the same function the colocated engine uses) and POST /weights (the policy's tensors as safetensors
bytes; loaded through vLLM's reload path). Every answer carries the number of weight pushes the
server has taken. The trainer pushes its weights after each step and counts its pushes: a server
whose count differs (restarted, so holding the files' weights) gets the weights again and the batch
is generated again, with one line saying so; a server that is gone or does not answer within
`rollout.vllm_server_timeout_s` ends the run with one line (the last checkpoint stands). Requests
name no path or URL: weights travel in the request body. What a request carries is checked before
the engine sees it (vllm_requests.py: rows, pushes, the bearer token of a server started with --token).

Without `rollout.vllm_url` the trainer starts the server itself (`ManagedServer`: a child process on a
free port of 127.0.0.1, stopped with the run). A server it started that dies is started again, and
the request it died on is sent again: the restarted server answers with a push count of 0, so the
weights are pushed and the step's batch generated again, as for any restarted server.
"""

from __future__ import annotations

import json
import os
import queue
import re
import socket
import subprocess
import sys
import threading
import traceback
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from collections import deque
from typing import Any, Iterator

import torch

from botgrpo_cli.console import console
from botgrpo_cli.errors import UserError
from botgrpo_cli.rollout.vllm import VLLMEngine, VLLMOptions, context_of, load_weights, sample_rows
from botgrpo_cli.rollout.vllm_requests import (Expected, Refused, check_authorization, check_push, check_rows,
                                               model_parameters, split_token)
from botgrpo_rewards.http_routes import expected_authorization
from botgrpo_rewards.protocol import LineChild

MAX_BODY = 64 * 2**30  # the largest weight push taken (bytes)
MAX_RESTARTS = 3  # restarts of a server botgrpo started, per run: past them a crashing server ends the run
READY = re.compile(r"vLLM server ready on (http://127\.0\.0\.1:\d+)")


def serialize(weights: Iterator[tuple[str, torch.Tensor]]) -> bytes:
    """Named tensors as safetensors bytes (contiguous CPU copies)."""
    from safetensors.torch import save

    return save({name: t.detach().to("cpu").contiguous() for name, t in weights})


class _Handler(BaseHTTPRequestHandler):
    server: "_Server"

    def log_message(self, *args: Any) -> None:  # one line per request is noise in a training log
        pass

    def _reply(self, code: int, payload: dict) -> None:
        body = json.dumps(payload).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        if code == 401:
            self.send_header("WWW-Authenticate", 'Bearer realm="botgrpo-vllm"')
        self.end_headers()
        self.wfile.write(body)

    def _body(self) -> bytes:
        raw = self.headers.get("Content-Length") or "0"
        length = int(raw) if raw.isascii() and raw.isdigit() else -1
        if not 0 < length <= MAX_BODY:
            raise Refused(400, f"a request body of {raw} bytes (Content-Length 1..{MAX_BODY})")
        return self.rfile.read(length)

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        try:
            check_authorization(self.headers.get("Authorization"), self.server.expected)
        except Refused as err:
            return self._reply(err.status, {"error": str(err)})
        if self.path != "/health":
            return self._reply(404, {"error": "GET /health only"})
        if self.server.broken:  # the truth: a reload that failed half-way left the engine unusable
            return self._reply(503, {"error": self.server.broken, "weights": self.server.pushes})
        self._reply(200, {"weights": self.server.pushes, "model": self.server.model_name,
                          "max_model_len": context_of(self.server.llm)})

    def do_POST(self) -> None:  # noqa: N802
        try:
            check_authorization(self.headers.get("Authorization"), self.server.expected)
            body = self._body()
            if self.path not in ("/generate", "/weights"):
                return self._reply(404, {"error": "POST /generate or /weights only"})
            with self.server.lock:  # one engine: requests take turns
                if self.server.broken:
                    return self._reply(503, {"error": self.server.broken})
                if self.path == "/generate":
                    return self._reply(200, {"samples": self._generate(body), "weights": self.server.pushes})
                self._load(body)
                return self._reply(200, {"weights": self.server.pushes})
        except Refused as err:
            self._reply(err.status, {"error": str(err)[:500]})
        except (ValueError, KeyError, TypeError) as err:
            self._reply(400, {"error": str(err)[:500]})
        except Exception as err:  # the engine's own failure: said, and the server goes on answering
            traceback.print_exc()
            self._reply(500, {"error": f"{type(err).__name__}: {err}"[:500]})

    def _generate(self, body: bytes) -> list:
        from vllm.exceptions import VLLMClientError

        req = json.loads(body)
        rows, seeds = check_rows(req, self.server.vocab, context_of(self.server.llm))
        try:
            return sample_rows(self.server.llm, rows, seeds, req.get("options") or {}, req.get("extra"))
        except VLLMClientError as err:  # what vLLM refuses of a request: the client's to fix
            raise Refused(400, str(err)) from None

    def _load(self, body: bytes) -> None:
        """Check the pushed tensors against the served model, then load them; a reload that fails
        after the checks passed leaves the server saying so (/health 503), never serving half a model."""
        from safetensors import SafetensorError
        from safetensors.torch import load

        try:
            tensors = load(body)
        except SafetensorError as err:
            raise Refused(400, f"the body is not safetensors bytes: {err}") from None
        check_push(tensors, self.server.parameters)
        try:
            load_weights(self.server.llm, tensors.items())
        except Exception as err:
            self.server.broken = (f"a weight push failed while loading ({type(err).__name__}: {err}); the engine's "
                                  "weights are unusable: restart `botgrpo vllm serve`")[:500]
            raise Refused(500, self.server.broken) from None
        self.server.pushes += 1


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], llm: Any, model_name: str, parameters: Expected,
                 token: str | None = None):
        super().__init__(address, _Handler)
        self.llm, self.model_name, self.pushes = llm, model_name, 0
        self.parameters = parameters  # what a weight push must hold (vllm_requests.check_push)
        self.vocab = int(llm.llm_engine.model_config.get_vocab_size())
        self.expected = expected_authorization(token)
        self.broken: str | None = None  # why the engine cannot serve any more, once a reload failed
        self.lock = threading.Lock()


def serve(llm: Any, model_name: str, host: str, port: int, parent: int | None = None, *, model_path: str,
          token: str | None = None) -> None:
    """Answer requests until interrupted (or until process `parent` is gone); prints the URL once
    ready. `token`: the bearer token every request must carry (refuse_open_bind decides when one is needed)."""
    server = _Server((host, port), llm, model_name, model_parameters(model_path), token)
    if parent is not None:
        threading.Thread(target=_exit_with, args=(parent,), daemon=True).start()
    console.print(f"vLLM server ready on http://{host}:{server.server_address[1]} ({model_name})"
                  + (" (bearer token required)" if token else ""))
    try:
        server.serve_forever()
    finally:
        server.server_close()


class NotAnswering(UserError):
    """The server is gone, or did not answer in time."""


def _exit_with(parent: int) -> None:
    """A server started by a trainer ends when the trainer is gone (even killed), freeing its memory."""
    import time

    while os.getppid() == parent:
        time.sleep(2)
    os._exit(0)


class ManagedServer:
    """`botgrpo vllm serve` in a child process of this one (127.0.0.1, a free port): started, started
    again after it died, and stopped; `url` is where it listens now."""

    def __init__(self, model_path: str, options: VLLMOptions, start_timeout_s: float):
        dtype = options.dtype if options.dtype != "auto" else "float32"
        self.args = [sys.executable, "-m", "botgrpo_cli", "vllm", "serve", model_path, "--port", "0",
                     "--dtype", dtype, "--gpu-memory-utilization", str(options.gpu_memory_utilization),
                     "--parent", str(os.getpid()),
                     "--enforce-eager" if options.enforce_eager else "--no-enforce-eager"]
        if options.max_model_len is not None:
            self.args += ["--max-model-len", str(options.max_model_len)]
        if options.kv_cache_gib is not None:
            self.args += ["--kv-cache-gib", str(options.kv_cache_gib)]
        self.start_timeout_s = start_timeout_s
        self.child: LineChild | None = None
        self.log: deque[str] = deque(maxlen=15)  # its last lines, for the message when it fails
        self.url = ""
        self.restarts = 0
        self.start()

    def start(self) -> None:
        ready: queue.Queue[str] = queue.Queue()

        def line(raw: bytes) -> None:  # keeps the child's output drained; hands over its URL once printed
            text = raw.decode("utf-8", errors="replace").rstrip()
            self.log.append(text)
            found = READY.search(text)
            if found:
                ready.put(found.group(1))

        # COLUMNS: the ready line stays on one line however long the model's path is
        self.child = LineChild(self.args, "vLLM server", env={"COLUMNS": "500"}, on_line=line, stderr="stdout",
                               on_exit=lambda: ready.put(""))
        try:
            url = ready.get(timeout=self.start_timeout_s)
        except queue.Empty:
            url = ""
        if not url:
            self.close()
            tail = "\n".join(self.log)
            raise UserError(f"the vLLM server botgrpo started for rollout.engine=vllm_server did not come up within "
                            f"{self.start_timeout_s:g} s (rollout.vllm_server_timeout_s); its last lines:\n{tail}")
        self.url = url

    def died(self, wait_s: float = 10.0) -> bool:
        """Whether it has exited, waiting up to wait_s for it (a killed process drops its connections
        a moment before it can be reaped)."""
        if self.child is None:
            return True
        try:
            self.child.proc.wait(timeout=wait_s)
        except subprocess.TimeoutExpired:
            return False
        return True

    def restart(self) -> None:
        """Start it again after it died; UserError once it has died more than MAX_RESTARTS times."""
        code = self.child.returncode if self.child is not None else None
        if self.restarts >= MAX_RESTARTS:
            raise UserError(f"the vLLM server botgrpo started died again (exit code {code}) after {self.restarts} "
                            "restarts; its last lines:\n" + "\n".join(self.log))
        self.restarts += 1
        console.print(f"[yellow]warning:[/] the vLLM server botgrpo started died (exit code {code}); starting it "
                      "again, pushing this run's weights and generating the step again")
        self.start()

    def close(self) -> None:
        """SIGTERM, 10 s to exit, then SIGKILL."""
        if self.child is not None and not self.child.exited:
            self.child.terminate(10)


class VLLMServerEngine(VLLMEngine):
    """The colocated engine's rows, seeds, options and batches, sampled by a server (at `url`, or the
    one `server` runs: then restarted if it dies)."""

    def __init__(self, model: Any, tokenizer: Any, url: str, timeout_s: float, server: ManagedServer | None = None):
        from botgrpo_cli.rollout.base import eos_ids, pad_id_of
        from botgrpo_cli.rollout.offsets import OffsetDecoder

        self.server = server
        url, self._token = split_token(url)  # the token goes in a header, never into a message
        self.url, self.timeout_s = url.rstrip("/"), timeout_s
        health = self._call("GET", "/health")
        self.pushed = health["weights"]  # the server's count: ours from here on
        self.context = health.get("max_model_len")
        self.model, self.tok = model, tokenizer
        self.decoder = OffsetDecoder(tokenizer)
        self.eos_ids = eos_ids(model, tokenizer)
        self.pad_id = pad_id_of(tokenizer, self.eos_ids)
        self.tp_group, self.asleep, self.syncs, self.options = None, False, 0, None

    def close(self) -> None:
        """Stop the server this engine started (a server at rollout.vllm_url is the user's)."""
        if self.server is not None:
            self.server.close()

    def _call(self, method: str, path: str, body: bytes | None = None) -> dict:
        try:
            return self._request(method, path, body)
        except NotAnswering:
            if self.server is None or not self.server.died():
                raise
        # the server we started died: start it again and send the request again (a weight count of 0
        # in its answer makes _sample push the weights and generate the batch again)
        self.server.restart()
        self.url = self.server.url
        return self._request(method, path, body)

    def _request(self, method: str, path: str, body: bytes | None = None) -> dict:
        req = urllib.request.Request(self.url + path, data=body, method=method,
                                     headers={"Authorization": f"Bearer {self._token}"} if self._token else {})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:
                return json.loads(resp.read())
        except urllib.error.HTTPError as err:
            raise UserError(f"the vLLM server at {self.url} refused {path}: {err.read()[:300].decode(errors='replace')}"
                            ) from None
        except (urllib.error.URLError, socket.timeout, ConnectionError, TimeoutError) as err:
            reason = getattr(err, "reason", err)
            raise NotAnswering(f"the vLLM server at {self.url} is not answering ({path}: {reason}); start it with "
                            f"`botgrpo vllm serve MODEL` (or check rollout.vllm_url), then continue with --resume"
                            ) from None

    def _push(self, weights: Iterator[tuple[str, torch.Tensor]]) -> None:
        self.pushed = self._call("POST", "/weights", serialize(weights))["weights"]

    def _sample(self, rows: list[list[int]], seeds: list[int], options: dict[str, Any],
                extra: list[dict | None] | None = None) -> list[tuple[list[int], list[float]]]:
        body = json.dumps({"rows": rows, "seeds": seeds, "options": options, "extra": extra}).encode()
        answer = self._call("POST", "/generate", body)
        if answer["weights"] != self.pushed:  # restarted (or pushed to by another trainer): not our weights
            console.print(f"[yellow]warning:[/] the vLLM server at {self.url} no longer holds this run's weights "
                          f"(it took {answer['weights']} pushes, this run made {self.pushed}); pushing them again "
                          "and generating the batch again")
            self.sync_weights()
            answer = self._call("POST", "/generate", body)
            if answer["weights"] != self.pushed:
                raise UserError(f"the vLLM server at {self.url} changed its weights during the step twice; is "
                                "another run pushing to it?")
        return [(list(tokens), list(logps)) for tokens, logps in answer["samples"]]


def check_url(url: str) -> str:
    if not url.startswith(("http://", "https://")):
        raise UserError("rollout.vllm_url must be http://HOST:PORT (a server started with `botgrpo vllm serve MODEL`), "
                        "or unset for botgrpo to start one")
    return url


def engine_for(model: Any, tokenizer: Any, url: str | None, timeout_s: float,
               start: tuple[str, VLLMOptions] | None = None) -> VLLMServerEngine:
    """The engine over the server at `url`; without one, over a server started here on start's
    (model path, options)."""
    server = None
    if url is None:
        if start is None:
            raise UserError("rollout.engine=vllm_server needs rollout.vllm_url, or the model to start a server on")
        server = ManagedServer(start[0], start[1], timeout_s)
        url = server.url
    try:
        engine = VLLMServerEngine(model, tokenizer, check_url(url), timeout_s, server)
        engine.sync_weights()  # the server loaded the files; the policy may be resumed or LoRA-adapted
    except BaseException:
        if server is not None:
            server.close()
        raise
    return engine

