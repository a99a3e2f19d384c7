"""Code-point offsets of generated tokens, with a real byte-level BPE tokenizer and non-ASCII text."""

from __future__ import annotations

import pytest
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

from botgrpo_cli.rollout.offsets import OffsetDecoder, cut_at_stop, is_byte_level, truncate

CORPUS = ["hello world, déjà vu", "naïve café 😀 ok", "数学 题目 and code {x}", "plain ascii text"] * 20


@pytest.fixture(scope="module")
def tok() -> PreTrainedTokenizerFast:
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    # A tiny vocabulary: most non-ASCII characters stay split into several byte tokens.
    trainer = trainers.BpeTrainer(vocab_size=300, special_tokens=["<eos>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    bpe.train_from_iterator(CORPUS, trainer)
    return PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<eos>", pad_token="<eos>")


def _check(text: str, offsets: list[tuple[int, int]]) -> None:
    pos = 0
    for start, end in offsets:
        assert start == pos and end >= start  # contiguous, monotone, covering
        pos = end
    assert pos == len(text)


@pytest.mark.parametrize("text", ["héllo wörld", "emoji 😀 and 数学!", "plain", "😀😀", "naïve café"])
def test_offsets_cover_text_exactly(tok, text):
    ids = tok.encode(text, add_special_tokens=False)
    dec = OffsetDecoder(tok)
    assert dec.byte_level and is_byte_level(tok)
    out, offsets = dec.decode(ids)
    assert out == text == tok.decode(ids)
    assert len(offsets) == len(ids)
    _check(out, offsets)


def test_multibyte_char_belongs_to_token_that_completes_it(tok):
    ids = tok.encode("😀", add_special_tokens=False)
    assert len(ids) > 1, "the tiny vocabulary should split the emoji's 4 bytes"
    _, offsets = OffsetDecoder(tok).decode(ids)
    assert offsets[:-1] == [(0, 0)] * (len(ids) - 1)  # incomplete bytes own nothing
    assert offsets[-1] == (0, 1)  # the last byte's token owns the whole character


def test_special_tokens_have_no_chars(tok):
    ids = tok.encode("ok", add_special_tokens=False) + [tok.eos_token_id]
    text, offsets = OffsetDecoder(tok).decode(ids)
    assert text == "ok" and offsets[-1] == (2, 2)


def test_truncated_multibyte_tail_is_replaced_and_owned_by_last_token(tok):
    ids = tok.encode("a😀", add_special_tokens=False)[:-1]  # cut inside the emoji
    text, offsets = OffsetDecoder(tok).decode(ids)
    assert text.startswith("a") and text.endswith("\ufffd")
    _check(text, offsets)


def test_prefix_fallback_matches_byte_path(tok):
    dec = OffsetDecoder(tok)
    ids = tok.encode("emoji 😀 and 数学!", add_special_tokens=False)
    assert dec._decode_prefixes(ids) == dec._decode_bytes(ids)


def test_stop_truncation_keeps_stop_and_clamps_last_token():
    text = "ab\n\nCD"
    offsets = [(0, 1), (1, 3), (3, 5), (5, 6)]  # token 2 spans "\nC": past the stop's end
    cut = cut_at_stop(text, ("\n\n", "zz"))
    assert cut == 4
    assert truncate(text, offsets, cut) == ("ab\n\n", [(0, 1), (1, 3), (3, 4)])
    assert cut_at_stop(text, ("zz",)) is None
