"""`botgrpo vllm serve MODEL`: a vLLM engine in its own process for rollout.engine=vllm_server."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from botgrpo_cli.config import DTYPES, VLLM_TOKEN_ENV as TOKEN_ENV
from botgrpo_cli.console import console
from botgrpo_rewards.protocol import is_loopback, refuse_open_bind


def register(app: typer.Typer) -> None:
    vllm_app = typer.Typer(no_args_is_help=True)

    @vllm_app.command("serve")
    def serve(
        model: Annotated[str, typer.Argument(help="The model the trainer trains: a directory, hub id or .gguf file.")],
        host: Annotated[str, typer.Option(help="Address to listen on; 127.0.0.1 keeps it on this machine.")] = "127.0.0.1",
        port: Annotated[int, typer.Option(min=0, max=65535, help="Port; 0 = any free one (printed).")] = 8011,
        dtype: Annotated[str, typer.Option(help=f"Weight dtype: {', '.join(DTYPES)}.")] = "float32",
        max_model_len: Annotated[Optional[int], typer.Option(help="Prompt + completion tokens.")] = None,
        kv_cache_gib: Annotated[Optional[float], typer.Option(help="KV cache memory in GiB.")] = None,
        gpu_memory_utilization: Annotated[float, typer.Option(help="Share of the GPU (on a CPU: RAM).")] = 0.9,
        enforce_eager: Annotated[bool, typer.Option(help="No CUDA graphs or compilation.")] = False,
        token: Annotated[Optional[str], typer.Option("--token", envvar=TOKEN_ENV, show_envvar=True, help="Bearer token every client must send (Authorization: Bearer TOKEN); the trainer sends it from rollout.vllm_url (http://:TOKEN@HOST:PORT) or $" + TOKEN_ENV + ".")] = None,
        allow_remote_without_token: Annotated[bool, typer.Option("--allow-remote-without-token", help="Serve beyond loopback with no token (anyone who can connect may generate and replace the weights).")] = False,
        parent: Annotated[Optional[int], typer.Option(hidden=True, help="Exit when this process is gone "
                                                      "(a trainer that started the server).")] = None,
    ) -> None:
        """Serve generation for `botgrpo train --set rollout.engine=vllm_server --set rollout.vllm_url=...`:
        the trainer pushes its weights after every step and samples each step's rows here."""
        from botgrpo_cli.config import ModelConfig
        from botgrpo_cli.errors import UserError
        from botgrpo_cli.rollout.vllm import VLLMOptions, load_llm
        from botgrpo_cli.rollout.vllm_server import serve as run_server
        from botgrpo_cli.trainer.policy import resolve_model_path

        if dtype not in DTYPES:
            raise UserError(f"--dtype must be one of {', '.join(DTYPES)}; got {dtype!r}")
        try:  # before minutes of loading: the same rule as `botgrpo reward serve --http`
            refuse_open_bind(host, token, allow_remote_without_token, f"--token (or set {TOKEN_ENV})")
        except ValueError as err:
            raise UserError(str(err)) from None
        if token is None and not is_loopback(host):
            console.print(f"[yellow]warning:[/] serving on {host} without a token: anyone who can connect may "
                          "generate and replace the weights every rollout samples from")
        path = resolve_model_path(ModelConfig(name_or_path=model, dtype=dtype), "")
        options = VLLMOptions(gpu_memory_utilization=gpu_memory_utilization, max_model_len=max_model_len,
                              dtype=dtype, enforce_eager=enforce_eager, kv_cache_gib=kv_cache_gib)
        run_server(load_llm(path, options, seed=0), model, host, port, parent, model_path=path, token=token)

    app.add_typer(vllm_app, name="vllm", help="vLLM: serve generation for rollout.engine=vllm_server.")
