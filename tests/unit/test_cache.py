"""The one cache helper: bounded, least recently used first out, thread-safe, cleared at once."""

from __future__ import annotations

import threading

import pytest

from cctest.cache import LRU, clear_caches


def test_forgets_the_least_recently_used_entry():
    cache: LRU[str, int] = LRU(2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1  # a is now the most recent
    cache.put("c", 3)
    assert "b" not in cache and "a" in cache and "c" in cache and len(cache) == 2


def test_a_remembered_none_is_a_hit():
    cache: LRU[str, int | None] = LRU(4)
    calls = []
    for _ in range(3):
        assert cache.get_or_compute("k", lambda: calls.append(1)) is None
    assert calls == [1]
    assert cache.get("missing", 7) == 7


def test_every_cache_is_bounded_and_thread_safe():
    cache: LRU[int, int] = LRU(50)

    def work(offset: int) -> None:
        for i in range(2000):
            cache.get_or_compute((i * 7 + offset) % 300, lambda i=i: i)
            cache.get(i % 300)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(cache) == 50


def test_clear_caches_empties_every_live_cache_including_the_modules_ones():
    from cctest.context import _parses

    mine: LRU[str, int] = LRU(3)
    mine.put("x", 1)
    _parses("def f(:\n")
    from cctest import context

    assert len(context._parse_cache) >= 1 and len(mine) == 1
    clear_caches()
    assert len(context._parse_cache) == 0 and len(mine) == 0


def test_a_size_below_one_is_refused():
    with pytest.raises(ValueError):
        LRU(0)
