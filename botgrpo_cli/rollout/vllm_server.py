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
name no path or URL: weights travel in the request body.
"""

from __future__ import annotations

import json
import socket
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Iterator

import torch

from botgrpo_cli.console import console
from botgrpo_cli.errors import UserError
from botgrpo_cli.rollout.vllm import VLLMEngine, load_weights, sample_rows

MAX_BODY = 64 * 2**30  # the largest weight push taken (bytes)


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
        self.end_headers()
        self.wfile.write(body)

    def _body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        if not 0 < length <= MAX_BODY:
            raise ValueError(f"a request body of {length} bytes")
        return self.rfile.read(length)

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        if self.path != "/health":
            return self._reply(404, {"error": "GET /health only"})
        self._reply(200, {"weights": self.server.pushes, "model": self.server.model_name})

    def do_POST(self) -> None:  # noqa: N802
        try:
            body = self._body()
            with self.server.lock:  # one engine: requests take turns
                if self.path == "/generate":
                    req = json.loads(body)
                    samples = sample_rows(self.server.llm, req["rows"], req["seeds"], req["options"])
                    return self._reply(200, {"samples": samples, "weights": self.server.pushes})
                if self.path == "/weights":
                    from safetensors.torch import load

                    load_weights(self.server.llm, load(body).items())
                    self.server.pushes += 1
                    return self._reply(200, {"weights": self.server.pushes})
            self._reply(404, {"error": "POST /generate or /weights only"})
        except (ValueError, KeyError, TypeError) as err:
            self._reply(400, {"error": str(err)[:500]})


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], llm: Any, model_name: str):
        import threading

        super().__init__(address, _Handler)
        self.llm, self.model_name, self.pushes = llm, model_name, 0
        self.lock = threading.Lock()


def serve(llm: Any, model_name: str, host: str, port: int) -> None:
    """Answer requests until interrupted; prints the URL once ready."""
    server = _Server((host, port), llm, model_name)
    console.print(f"vLLM server ready on http://{host}:{server.server_address[1]} ({model_name})")
    try:
        server.serve_forever()
    finally:
        server.server_close()


class VLLMServerEngine(VLLMEngine):
    """The colocated engine's rows, seeds, options and batches, sampled by a server."""

    def __init__(self, model: Any, tokenizer: Any, url: str, timeout_s: float):
        from botgrpo_cli.rollout.base import eos_ids, pad_id_of
        from botgrpo_cli.rollout.offsets import OffsetDecoder

        self.url, self.timeout_s = url.rstrip("/"), timeout_s
        self.pushed = self._call("GET", "/health")["weights"]  # the server's count: ours from here on
        self.model, self.tok = model, tokenizer
        self.decoder = OffsetDecoder(tokenizer)
        self.eos_ids = eos_ids(model, tokenizer)
        self.pad_id = pad_id_of(tokenizer, self.eos_ids)
        self.tp_group, self.asleep, self.syncs, self.options = None, False, 0, None

    def _call(self, method: str, path: str, body: bytes | None = None) -> dict:
        req = urllib.request.Request(self.url + path, data=body, method=method)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:
                return json.loads(resp.read())
        except urllib.error.HTTPError as err:
            raise UserError(f"the vLLM server at {self.url} refused {path}: {err.read()[:300].decode(errors='replace')}"
                            ) from None
        except (urllib.error.URLError, socket.timeout, ConnectionError, TimeoutError) as err:
            reason = getattr(err, "reason", err)
            raise UserError(f"the vLLM server at {self.url} is not answering ({path}: {reason}); start it with "
                            f"`botgrpo vllm serve MODEL` (or check rollout.vllm_url), then continue with --resume"
                            ) from None

    def _push(self, weights: Iterator[tuple[str, torch.Tensor]]) -> None:
        self.pushed = self._call("POST", "/weights", serialize(weights))["weights"]

    def _sample(self, rows: list[list[int]], seeds: list[int], options: dict[str, Any]
                ) -> list[tuple[list[int], list[float]]]:
        body = json.dumps({"rows": rows, "seeds": seeds, "options": options}).encode()
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


def check_url(url: str | None) -> str:
    if not url or not url.startswith(("http://", "https://")):
        raise UserError("rollout.engine=vllm_server needs rollout.vllm_url=http://HOST:PORT "
                        "(a server started with `botgrpo vllm serve MODEL`)")
    return url


def engine_for(model: Any, tokenizer: Any, url: str | None, timeout_s: float) -> VLLMServerEngine:
    engine = VLLMServerEngine(model, tokenizer, check_url(url), timeout_s)
    engine.sync_weights()  # the server loaded the files; the policy may be resumed or LoRA-adapted
    return engine

