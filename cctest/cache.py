"""The one cache helper: a small bounded, thread-safe LRU mapping, and ``clear_caches()``.

Every cache in cctest and its language server is an ``LRU``: the server's answers, the mutants
per window, the parse results of the context window, the mutators' per-window facts, the HF
backend's token masks. Each is bounded (it forgets the least recently used entry past ``size``)
and safe to use from several threads (the language server runs the engine in worker threads).
A value is computed outside the lock, so a slow computation never blocks other readers; two
threads asking for the same missing key may both compute it, and the later one's value stays.

Tests that must not see answers from an earlier test call ``clear_caches()``, which empties every
``LRU`` alive, instead of reaching into module globals.

>>> squares = LRU[int, int](2)
>>> squares.get_or_compute(3, lambda: 9)
9
>>> squares.put(4, 16); squares.put(5, 25)
>>> 3 in squares, len(squares)
(False, 2)
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar, overload

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
D = TypeVar("D")

_ALL: weakref.WeakSet[LRU[Any, Any]] = weakref.WeakSet()
_ALL_LOCK = threading.Lock()


class LRU(Generic[K, V]):
    """A bounded mapping that forgets the least recently used entry; every method is atomic."""

    def __init__(self, size: int) -> None:
        if size < 1:
            raise ValueError(f"an LRU holds at least one entry, not {size}.")
        self.size = size
        self._data: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()
        with _ALL_LOCK:
            _ALL.add(self)

    @overload
    def get(self, key: K) -> V | None: ...
    @overload
    def get(self, key: K, default: D) -> V | D: ...
    def get(self, key: K, default: object = None) -> object:
        """The value for ``key`` (now the most recently used), or ``default``."""
        with self._lock:
            if key not in self._data:
                return default
            self._data.move_to_end(key)
            return self._data[key]

    def put(self, key: K, value: V) -> None:
        """Remember ``value`` for ``key``, forgetting the least recently used entry past ``size``."""
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            while len(self._data) > self.size:
                self._data.popitem(last=False)

    def get_or_compute(self, key: K, compute: Callable[[], V]) -> V:
        """The value for ``key``; on a miss ``compute()`` (outside the lock) is remembered."""
        with self._lock:
            if key in self._data:
                self._data.move_to_end(key)
                return self._data[key]
        value = compute()
        self.put(key, value)
        return value

    def clear(self) -> None:
        with self._lock:
            self._data.clear()

    def __contains__(self, key: object) -> bool:
        with self._lock:
            return key in self._data

    def __len__(self) -> int:
        with self._lock:
            return len(self._data)


def clear_caches() -> None:
    """Empty every cache alive (for tests: results must not depend on what ran before)."""
    with _ALL_LOCK:
        caches = list(_ALL)
    for cache in caches:
        cache.clear()


__all__ = ["LRU", "clear_caches"]
