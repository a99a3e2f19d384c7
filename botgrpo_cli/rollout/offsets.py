"""Completion text and exact per-token code-point offsets from generated token ids.

A token owns the characters it completes: with byte-level tokens a multi-byte character split across
tokens belongs to the token holding its last byte; a token that completes no character gets (s, s).
"""

from __future__ import annotations

import codecs
import functools
import json
from typing import Any


@functools.lru_cache(maxsize=1)
def _byte_decoder() -> dict[str, int]:
    """Inverse of the byte-level BPE alphabet: printable bytes stand for themselves, the other 68
    bytes are shifted to code points 256.. in byte order (the GPT-2 convention)."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    table, shift = {}, 0
    for b in range(256):
        if b in printable:
            table[chr(b)] = b
        else:
            table[chr(256 + shift)] = b
            shift += 1
    return table


def is_byte_level(tokenizer: Any) -> bool:
    """True when the tokenizer's decoder is (or contains) the byte-level decoder."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        return False
    decoder = json.loads(backend.to_str()).get("decoder") or {}
    return "ByteLevel" in json.dumps(decoder)


class OffsetDecoder:
    """Turns generated ids into (text, offsets) for one tokenizer."""

    def __init__(self, tokenizer: Any):
        self.tok = tokenizer
        self.byte_level = is_byte_level(tokenizer)
        self.special = set(tokenizer.all_special_ids)
        added = getattr(tokenizer, "added_tokens_decoder", {}) or {}
        self.added = {i: t.content for i, t in added.items() if i not in self.special}
        self._bytes: dict[int, bytes] = {}  # token id -> its bytes, filled as ids are seen

    def decode(self, ids: list[int]) -> tuple[str, list[tuple[int, int]]]:
        """Text of `ids` (special tokens skipped) and one (start, end) code-point pair per id."""
        if self.byte_level:
            return self._decode_bytes(ids)
        return self._decode_prefixes(ids)

    def _token_bytes(self, token_id: int) -> bytes:
        cached = self._bytes.get(token_id)
        if cached is None:
            cached = self._bytes[token_id] = self._bytes_of(token_id)
        return cached

    def _bytes_of(self, token_id: int) -> bytes:
        if token_id in self.special:
            return b""
        if token_id in self.added:
            return self.added[token_id].encode()
        table = _byte_decoder()
        piece = self.tok.convert_ids_to_tokens(token_id)
        return b"".join(bytes([table[c]]) if c in table else c.encode() for c in piece)

    def _decode_bytes(self, ids: list[int]) -> tuple[str, list[tuple[int, int]]]:
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        parts, offsets, pos = [], [], 0
        for k, token_id in enumerate(ids):
            chunk = decoder.decode(self._token_bytes(token_id), final=k == len(ids) - 1)
            parts.append(chunk)
            offsets.append((pos, pos + len(chunk)))
            pos += len(chunk)
        return "".join(parts), offsets

    def _decode_prefixes(self, ids: list[int]) -> tuple[str, list[tuple[int, int]]]:
        """Fallback for other tokenizers: decode growing prefixes; a trailing U+FFFD before the last
        token is an incomplete character and is not yet owned."""
        offsets, prev = [], 0
        text = ""
        for k in range(len(ids)):
            text = self.tok.decode(ids[: k + 1], skip_special_tokens=True, clean_up_tokenization_spaces=False)
            end = len(text) if k == len(ids) - 1 else len(text.rstrip("\ufffd"))
            end = max(end, prev)
            offsets.append((prev, end))
            prev = end
        return text, offsets


def cut_at_stop(text: str, stops: tuple[str, ...]) -> int | None:
    """Code-point index just after the earliest stop string in `text`, or None."""
    ends = [i + len(s) for s in stops if s and (i := text.find(s)) >= 0]
    return min(ends) if ends else None


def truncate(text: str, offsets: list[tuple[int, int]], cut: int) -> tuple[str, list[tuple[int, int]]]:
    """Keep the tokens up to the one that reaches `cut` and the text up to `cut` (the stop is kept;
    the last kept token's end is clamped to `cut`)."""
    kept = []
    for start, end in offsets:
        kept.append((min(start, cut), min(end, cut)))
        if end >= cut:
            break
    return text[:cut], kept
