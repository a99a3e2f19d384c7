"""One HTTP/1.1 connection of the reward service: an asyncio protocol on the server's event-loop thread.

A connection is IDLE (waiting for a request: closed after --http-timeout-s of silence), then HEAD
and BODY while a request arrives (all of it, head and body, must arrive within --http-timeout-s of
its first byte: a client trickling one byte at a time cannot hold a connection), then BUSY while
the runner's threads score it (requests on one connection are answered in order: pipelined ones
wait in the buffer, and reading pauses when they pile up), and CLOSING once its last answer is
written. A client that stops reading its answers is closed after the same timeout.

A connection is *trusted* once a request head passed `admit` (the token, when one is set). Until
then it must have sent a whole request head `header_timeout_s` (default 10 s) after connecting,
and it is the first to be closed when the server needs room (http_server.py): idle sockets from a
client without the token cannot lock out one that has it. Repeated problems are summed up in the log (log_tally.py).
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import logging
import re
import time
from typing import TYPE_CHECKING

from botgrpo_rewards.http_routes import Head, Refused, Reply, admit, error_body, respond

if TYPE_CHECKING:
    from botgrpo_rewards.http_server import HttpServer

log = logging.getLogger("botgrpo_rewards")

MAX_HEAD_BYTES = 65536
MAX_HEADER_LINES = 100
IDLE, HEAD, BODY, BUSY, CLOSING, CLOSED = "idle", "head", "body", "busy", "closing", "closed"
_HEAD_END = re.compile(rb"\r?\n\r?\n")
_VERSION = re.compile(r"HTTP/\d+(\.\d+)?")
REASONS = {100: "Continue", 200: "OK", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found",
           411: "Length Required", 413: "Content Too Large", 431: "Request Header Fields Too Large",
           500: "Internal Server Error", 501: "Not Implemented", 505: "HTTP Version Not Supported"}
WAITING_FOR = {IDLE: "silent", HEAD: "request head incomplete", BODY: "request body incomplete",
               CLOSING: "answer not read"}


def parse_head(raw: bytes) -> Head:
    """A request head (without its blank line) -> Head; Refused (400/431/505) when malformed."""
    lines = raw.decode("latin-1").split("\n")
    request_line = lines[0].rstrip("\r")
    parts = request_line.split(" ")
    if len(parts) != 3 or not parts[0].isalpha() or not parts[1]:
        raise Refused(400, "bad_request", f"malformed request line {request_line[:100]!r}")
    method, path, version = parts
    if version not in ("HTTP/1.1", "HTTP/1.0"):
        if _VERSION.fullmatch(version):
            raise Refused(505, "bad_request", f"{version} is not supported; speak HTTP/1.1")
        raise Refused(400, "bad_request", f"malformed request line {request_line[:100]!r}")
    if len(lines) - 1 > MAX_HEADER_LINES:
        raise Refused(431, "too_large", f"more than {MAX_HEADER_LINES} header lines")
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, sep, value = line.rstrip("\r").partition(":")
        if not sep or not name or name != name.strip() or " " in name:  # obs-fold or garbage
            raise Refused(400, "bad_request", f"malformed header line {line[:100]!r}")
        key, value = name.lower(), value.strip()
        headers[key] = f"{headers[key]}, {value}" if key in headers else value  # a repeated Content-Length is then invalid
    return Head(method, path, version, headers)  # methods are case-sensitive: "get" is not GET


_date = [0, ""]
_ENCODER = json.JSONEncoder(ensure_ascii=True, allow_nan=False)  # made once: json.dumps with options builds one per call


def http_date() -> str:
    """The Date header's value, formatted once per second."""
    now = int(time.time())
    if now != _date[0]:
        _date[:] = [now, email.utils.formatdate(now, usegmt=True)]
    return _date[1]


def encode_reply(reply: Reply, keep_alive: bool, head: Head | None) -> bytes:
    """Status line, headers and JSON body as one buffer: one write, no Nagle / delayed-ACK stall."""
    try:
        body = _ENCODER.encode(reply.body).encode()
    except (TypeError, ValueError) as err:  # an unencodable answer costs this request, not the server
        reply = Reply(500, error_body("bad_result", f"the answer could not be encoded: {err}"))
        body = json.dumps(reply.body).encode()
    lines = [f"HTTP/1.1 {reply.code} {REASONS.get(reply.code, 'Unknown')}", "Content-Type: application/json",
             f"Content-Length: {len(body)}", f"Date: {http_date()}"]
    lines += [f"{name}: {value}" for name, value in reply.headers]
    if not keep_alive:
        lines.append("Connection: close")
    elif head is not None and head.version == "HTTP/1.0":
        lines.append("Connection: keep-alive")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


class Connection(asyncio.Protocol):
    def __init__(self, server: HttpServer):
        self.server = server
        self.settings = server.settings
        self.transport: asyncio.Transport | None = None
        self.peer = "?"
        self.buf = bytearray()
        self.scanned = 0  # bytes of buf already searched for the end of the head
        self.state = IDLE
        self.head: Head | None = None
        self.body_len = 0
        self.deadline: float | None = None  # the server's sweep closes the connection when passed
        self.blocked = False  # the client is not reading its answers (our write buffer is full)
        self.paused = False  # reading paused: pipelined requests waiting while one is scored, or unread answers
        self.eof = False  # the client closed its sending side
        self.trusted = False  # a request head of it was admitted (see the module docstring)
        self.started = 0.0  # when the current request's first byte arrived

    # asyncio callbacks ------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        peer = transport.get_extra_info("peername")
        self.peer = str(peer[0]) if peer else "?"
        if not self.server.opened(self):  # at the connection cap (the server logs it)
            self.state = CLOSED
            transport.abort()
            return
        self._wait_idle()

    def connection_lost(self, exc: Exception | None) -> None:
        if self.state in (HEAD, BODY, BUSY):
            self.server.tally.note(logging.INFO, "clients disconnected mid-request", "client %s disconnected "
                                   "mid-request%s", self.peer, f": {type(exc).__name__}" if exc else "")
        self.state, self.deadline = CLOSED, None
        self.server.closed(self)

    def data_received(self, data: bytes) -> None:
        if self.state in (CLOSING, CLOSED):
            return
        self.buf += data
        if self.state == IDLE:
            self._start_request()
        elif self.state == BUSY and len(self.buf) > MAX_HEAD_BYTES and not self.paused:
            self.paused = True  # pipelined requests pile up while one is scored: stop reading for now
            self.transport.pause_reading()  # type: ignore[union-attr]
        self._advance()

    def eof_received(self) -> bool:
        self.eof = True
        if self.state == BUSY:
            return True  # keep the sending side open for its answer; closed after it
        if self.state in (HEAD, BODY):
            self.server.tally.note(logging.INFO, "clients closed their side mid-request",
                                   "client %s closed its side mid-request", self.peer)
            self.state = CLOSING
        return False  # asyncio closes the transport

    def pause_writing(self) -> None:
        self.blocked = True
        if not self.paused:
            self.paused = True  # no new requests while the client does not read the answers
            self.transport.pause_reading()  # type: ignore[union-attr]
        limit = self.server.now() + self.settings.timeout_s
        self.deadline = limit if self.deadline is None else min(self.deadline, limit)

    def resume_writing(self) -> None:
        self.blocked = False
        if self.state == IDLE:
            self._next_request()

    # the request cycle -------------------------------------------------------------------------

    def expire(self) -> None:
        """Called by the server's sweep once `deadline` has passed."""
        why = "not reading its answers" if self.blocked else WAITING_FOR.get(self.state, self.state)
        if self.trusted:
            limit = f"{self.settings.timeout_s:g} s (--http-timeout-s)"
        else:
            limit = f"{self._timeout():g} s after connecting, with no admitted request"
        self.server.tally.note(logging.INFO, f"connections closed at their timeout ({why})",
                               "closing the connection from %s: %s for %s", self.peer, why, limit)
        self._abort()

    def evictable(self) -> bool:
        """Closed first when the server needs room: no admitted request yet, and none being read past its head."""
        return not self.trusted and self.state in (IDLE, HEAD)

    def _timeout(self) -> float:
        """Silence and request time allowed: shorter for a connection that has not shown its token."""
        return self.settings.timeout_s if self.trusted else min(self.settings.timeout_s, self.settings.header_timeout_s)

    def _wait_idle(self) -> None:
        self.state, self.deadline = IDLE, self.server.now() + self._timeout()

    def _start_request(self) -> None:
        self.state = HEAD  # one deadline for the whole request, head and body
        self.started = self.server.now()
        if self.trusted or self.deadline is None:  # else the one set on arrival: a head within header_timeout_s of connecting
            self.deadline = self.started + self._timeout()

    def _advance(self) -> None:
        try:
            if self.state == HEAD:
                self._read_head()
            if self.state == BODY:
                self._read_body()
        except Refused as refusal:
            self._answer(refusal.reply)
        except Exception as err:  # a bug here costs this connection only, in one line
            log.error("connection from %s failed: %s: %s", self.peer, type(err).__name__, err)
            self._abort()

    def _read_head(self) -> None:
        if self.buf[:1] in (b"\r", b"\n"):  # blank lines before a request are ignored
            del self.buf[: len(self.buf) - len(self.buf.lstrip(b"\r\n"))]
        end = _HEAD_END.search(self.buf, max(0, self.scanned - 3))
        if end is None:
            self.scanned = len(self.buf)
            if len(self.buf) > MAX_HEAD_BYTES:
                raise Refused(431, "too_large", f"request head over {MAX_HEAD_BYTES} bytes")
            return
        if end.end() > MAX_HEAD_BYTES:
            raise Refused(431, "too_large", f"request head over {MAX_HEAD_BYTES} bytes")
        self.head = parse_head(bytes(self.buf[: end.start()]))
        del self.buf[: end.end()]
        self.scanned = 0
        self.body_len = admit(self.head, self.server.expected, self.settings.max_body_bytes)
        if not self.trusted:  # its body may now take the full --http-timeout-s
            self.trusted = True
            self.deadline = self.started + self.settings.timeout_s
        self.state = BODY
        if self.body_len > len(self.buf) and "100-continue" in self.head.headers.get("expect", "").lower():
            self.transport.write(b"HTTP/1.1 100 Continue\r\n\r\n")  # type: ignore[union-attr]

    def _read_body(self) -> None:
        if len(self.buf) < self.body_len:
            return
        body = bytes(self.buf[: self.body_len])
        del self.buf[: self.body_len]
        self.state, self.deadline = BUSY, None  # scoring is bounded by the runner's deadlines
        respond(self.head, body, self.server.runner, self._done, self.settings.max_batch)  # type: ignore[arg-type]

    def _done(self, reply: Reply) -> None:
        """From any thread: the answer goes out on the loop's thread."""
        self.server.post(self._answer, reply)

    def _answer(self, reply: Reply) -> None:
        if self.state in (CLOSING, CLOSED):  # the client went away (or was cut off) while its request was scored
            return
        head, self.head = self.head, None
        keep = not (reply.close or self.eof or head is None or not head.keep_alive())
        self.transport.write(encode_reply(reply, keep, head))  # type: ignore[union-attr]
        if not keep:
            self.state, self.deadline = CLOSING, self.server.now() + self.settings.timeout_s
            self.transport.close()  # type: ignore[union-attr]  # after the answer is flushed
            return
        self._wait_idle()
        if not self.blocked:  # else resume_writing goes on
            self._next_request()

    def _next_request(self) -> None:
        self.deadline = self.server.now() + self._timeout()
        if self.paused:
            self.paused = False
            self.transport.resume_reading()  # type: ignore[union-attr]
        if self.buf:  # a pipelined request is already here
            self._start_request()
            self._advance()

    def _abort(self) -> None:
        self.state, self.deadline = CLOSING, None
        if self.transport is not None:
            self.transport.abort()
