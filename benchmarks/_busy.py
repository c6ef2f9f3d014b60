"""Processes that spin on the CPU beside a benchmark (``--busy N``): a user's loaded laptop."""

from __future__ import annotations

import multiprocessing
from collections.abc import Iterator
from contextlib import contextmanager


def _spin() -> None:
    while True:
        pass


@contextmanager
def busy(n: int) -> Iterator[None]:
    """``n`` processes spinning for the block's duration (started fresh, not forked, so that they
    hold none of the benchmark's memory)."""
    ctx = multiprocessing.get_context("spawn")
    spinners = [ctx.Process(target=_spin, daemon=True) for _ in range(max(0, n))]
    for p in spinners:
        p.start()
    try:
        yield
    finally:
        for p in spinners:
            p.terminate()
        for p in spinners:
            p.join()
