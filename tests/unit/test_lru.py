"""The one bounded cache: by count, and by bytes where the values are large (screenshots)."""

from __future__ import annotations

import pytest

from botgrpo_rewards.lru import LRU
from botgrpo_rewards.render.renderer import Render
from botgrpo_rewards.render.service import _render_bytes


def test_count_bound_evicts_least_recently_used():
    cache = LRU(2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1  # a is now the most recent
    cache.put("c", 3)
    assert (cache.get("a"), cache.get("b"), cache.get("c")) == (1, None, 3)


def test_byte_bound_evicts_until_under_and_keeps_count_of_bytes():
    cache = LRU(100, max_bytes=10, weigh=len)
    for key in "abc":
        cache.put(key, key * 4)  # 4 bytes each: the third pushes the first out
    assert cache.get("a") is None and cache.get("b") == "bbbb" and cache.bytes == 8
    cache.put("b", "B")  # replacing a value re-weighs it
    assert cache.bytes == 5 and len(cache) == 2
    cache.put("huge", "x" * 11)  # larger than the bound: not kept, nothing else evicted for it
    assert cache.get("huge") is None and len(cache) == 2


def test_render_cache_weighs_the_screenshot():
    small, big = Render(rendered=True, png=b"x" * 10), Render(rendered=True, png=b"x" * 5000, text="hi")
    assert _render_bytes(big) > _render_bytes(small) >= 10
    cache = LRU(512, max_bytes=6000, weigh=_render_bytes)
    cache.put(1, big)
    cache.put(2, big)
    assert cache.get(1) is None and cache.get(2) is big


def test_bytes_without_a_weight_is_refused():
    with pytest.raises(ValueError, match="together"):
        LRU(4, max_bytes=10)
