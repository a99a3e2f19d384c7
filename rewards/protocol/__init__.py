"""Reward protocol v1: the one module services, the reward client and `botgrpo reward score` share.

Import everything from here (`from botgrpo_rewards.protocol import ScoreRequest`); the files
behind it split the work by job and are not an interface of their own:
- wire.py: the messages (ScoreRequest, ScoreResponse, Span, Hello, ...), size caps, statuses, errors;
- checks.py: field and value checks (spans, scores, metrics, info, request options);
- codec.py: objects to lines and lines to checked objects;
- thinking.py: where a reasoning model's answer starts (split_reasoning), for client and services;
- re-exported from botgrpo_base, the layer below client and services: the one rule of every
  registry (Plugins: built-ins in code, plugins by entry point, a plugin never replaces a built-in)
  and the stdio transport's other end, a child process speaking lines (LineChild, terminate_all),
  which the client's service pool and the services' own helpers run on, as do the trainer's ranks;
- functions.py, forked.py, batcher.py, function_loader.py, function_worker.py: reward function
  workers, the second line format (a batch of completions in, one item per completion out), which
  the client's FunctionPool and the `function` service share.

Transport: one JSON object per line (UTF-8) over stdin/stdout, or the same objects over HTTP.
See PROTOCOL.md beside this package for the prose version with worked examples.
Offsets are Unicode code points of the completion (Python `str` indices), half-open [start, end).
"""

from botgrpo_rewards.protocol.checks import (
    check_options,
    clean_info,
    is_loopback,
    refuse_open_bind,
    server_setting,
    validate_metrics,
    validate_score,
    validate_spans,
    version_mismatch,
)
from botgrpo_base.child import ChildExited, LineChild, cpu_seconds, terminate_all
from botgrpo_rewards.protocol.codec import (
    decode_message,
    decode_request,
    encode,
    read_lines,
    request_from_json,
    response_from_json,
)
from botgrpo_rewards.protocol.batcher import Batcher, Item
from botgrpo_rewards.protocol.function_loader import FunctionLoadError, SpecError, first_line, load_function
from botgrpo_rewards.protocol.forked import ForkedChild
from botgrpo_rewards.protocol.function_worker import bound_memory, where_raised
from botgrpo_rewards.protocol.function_worker import handle as answer_function_batch
from botgrpo_rewards.protocol.functions import (
    NOT_SCORABLE,
    FunctionProcess,
    WorkerFailed,
    WorkerTimeout,
    absolute_spec,
    batch_line,
    callable_name,
    is_ready_line,
    read_item,
    ready_child,
    split_spec,
)
from botgrpo_base.plugins import PluginImportError, Plugins, load_target
from botgrpo_rewards.protocol.thinking import DEFAULT_TAGS, Reasoning, opens_reasoning, split_reasoning
from botgrpo_rewards.protocol.wire import (
    CAPABILITY_DETERMINISTIC,
    DEFAULT_DEADLINE_MS,
    DEFAULT_MEMORY_MB,
    MAX_COMPLETION_CHARS,
    MAX_DEADLINE_MS,
    MAX_LINE_BYTES,
    MAX_PROMPT_CHARS,
    STATUS_ERROR,
    STATUS_OK,
    STATUS_TIMEOUT,
    STATUSES,
    TOKEN_ENV,
    VERSION,
    ErrorInfo,
    Hello,
    Message,
    Ping,
    Pong,
    ProtocolError,
    Request,
    ScoreRequest,
    ScoreResponse,
    ServiceStartError,
    Shutdown,
    Span,
    error_response,
)

__all__ = [
    "Batcher", "DEFAULT_MEMORY_MB", "FunctionProcess", "Item", "NOT_SCORABLE", "WorkerFailed", "WorkerTimeout",
    "batch_line", "callable_name", "read_item", "split_spec", "FunctionLoadError", "SpecError", "first_line",
    "load_function", "bound_memory", "where_raised", "answer_function_batch", "ForkedChild", "absolute_spec", "is_ready_line", "ready_child",
    "CAPABILITY_DETERMINISTIC", "DEFAULT_TAGS", "Reasoning", "opens_reasoning", "split_reasoning",
    "ChildExited", "DEFAULT_DEADLINE_MS", "ErrorInfo", "Hello", "LineChild", "MAX_COMPLETION_CHARS",
    "MAX_DEADLINE_MS", "MAX_LINE_BYTES", "MAX_PROMPT_CHARS", "Message", "Ping", "Pong", "ProtocolError",
    "Request", "STATUSES", "STATUS_ERROR", "STATUS_OK", "STATUS_TIMEOUT", "ScoreRequest", "ScoreResponse",
    "ServiceStartError", "Shutdown", "Span", "TOKEN_ENV", "VERSION", "check_options", "clean_info", "cpu_seconds",
    "decode_message", "decode_request", "encode", "error_response", "is_loopback", "load_target", "read_lines",
    "refuse_open_bind", "request_from_json", "PluginImportError", "Plugins",
    "response_from_json", "server_setting", "terminate_all", "validate_metrics", "validate_score", "validate_spans",
    "version_mismatch",
]
