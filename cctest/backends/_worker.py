"""The one thread that runs local models: loading them and every ``generate``.

PyTorch's CPU kernels run on OpenMP threads (GNU libgomp in the PyPI wheels), in a team per
calling thread, which lives as long as that thread. Between two parallel regions a team's threads
spin for a while before they sleep, so the next region starts at once; but once the process holds
more OpenMP threads than there are cores (a team of the main thread besides one of a worker
thread, or one per thread of a pool) libgomp spins only briefly and puts them to sleep after every
region. A decoding step of a small model is hundreds of tiny parallel regions, and each then waits
for a sleeping thread to be woken: on 2 cores a repair-mode request took a median 1.70× as long
on the bundled model and 1.28× on a 135M one beside a live thread that had run torch work
(``benchmarks/model_thread.py``). ``asyncio.to_thread`` runs each call on
whichever thread of the loop's pool is free, which makes such teams; so every call that runs a
model goes to this one thread instead: ``arun`` from async code, ``run`` from blocking code (run
directly when already on it, so a call from inside a call does not wait for itself).

Models are locked one call at a time anyway (``LoadedModel.lock``); one thread for all of them also
runs two models' calls one after the other (side-by-side benchmark runs, two views of a server).
Code that runs torch on other threads of the same process (its own tensors on the main thread)
brings its own team back, and with it the slower regime.

Work that can wait (finishing the rows an early decision cut, for the defect log's verdict) asks
``waiting()`` between its steps and gives the thread up as soon as a call is queued behind it, or
a request is under way (``requesting``); it starts again once none is (``idle``).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")

_NAME = "cctest-model"
_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None
_ident: int | None = None  # the pool's thread, once it has run something
_queued = 0  # calls submitted that have not started, and requests under way (``requesting``)
_count = threading.Lock()


def _executor() -> ThreadPoolExecutor:
    global _pool
    with _lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=_NAME, initializer=_mark)
        return _pool


def _mark() -> None:
    global _ident
    _ident = threading.get_ident()


def _forget() -> None:
    """In a forked child the pool's thread does not exist: the next call starts another."""
    global _pool, _ident, _lock, _queued, _count
    _pool, _ident, _lock, _queued, _count = None, None, threading.Lock(), 0, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget)


def on_model_thread() -> bool:
    return _ident is not None and threading.get_ident() == _ident


def waiting() -> int:
    """How many calls are queued for the model thread and have not started, plus the requests
    under way (``requesting``): what work that can wait gives way to."""
    return _queued


@contextlib.contextmanager
def requesting() -> Iterator[None]:
    """A request is under way (its mutants made, its model call, its verdict): while inside,
    ``waiting()`` counts one more, so work that can wait leaves the thread (and the CPU) to it."""
    global _queued
    with _count:
        _queued += 1
    try:
        yield
    finally:
        with _count:
            _queued -= 1


async def idle(poll: float = 0.005) -> None:
    """Return once nothing waits for the model thread (``waiting()`` is 0), polling."""
    while waiting():
        await asyncio.sleep(poll)


def _submit(call: Callable[[], T]) -> Future[T]:
    """``call`` queued for the model thread, counted in ``waiting()`` until it starts (or is
    cancelled before it does)."""
    global _queued
    ran = False

    def started() -> T:
        nonlocal ran
        global _queued
        with _count:
            _queued -= 1
            ran = True
        return call()

    def ended(future: Future[T]) -> None:
        global _queued
        with _count:
            if not ran:  # cancelled in the queue
                _queued -= 1

    with _count:
        _queued += 1
    future = _executor().submit(started)
    future.add_done_callback(ended)
    return future


def run(fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """``fn(*args, **kwargs)`` on the model thread, waiting for it (its exceptions are raised here)."""
    if on_model_thread():
        return fn(*args, **kwargs)
    return _submit(functools.partial(fn, *args, **kwargs)).result()


async def arun(fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """``fn(*args, **kwargs)`` on the model thread, awaited (``asyncio.to_thread`` on one thread).
    Cancelling the await does not stop a call that has started, as with ``to_thread``."""
    if on_model_thread():  # an event loop run on the model thread itself: it cannot wait for itself
        return fn(*args, **kwargs)
    return await asyncio.wrap_future(_submit(functools.partial(fn, *args, **kwargs)))


__all__ = ["arun", "idle", "on_model_thread", "requesting", "run", "waiting"]
