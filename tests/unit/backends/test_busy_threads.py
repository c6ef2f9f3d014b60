"""With ``threads`` 0 (the default) on a CPU, the HF backend sets torch's threads before each call
to the cores other work leaves idle: a thread more than the free cores makes every parallel region
wait for a thread the kernel has put aside (docs/backend-hf.md, "Threads on a busy machine").
The load here is real: processes spinning on every core."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager

from busy import busy_cpus

from cctest.backends import run_on_model_thread
from cctest.backends.base import GenerationOptions
from cctest.backends.hf import HFBackend
from cctest.backends.loaded import idle_cores

CPUS = len(os.sched_getaffinity(0))


@contextmanager
def spinning(n: int) -> Iterator[None]:
    """``n`` processes spinning on the CPU (``busy_cpus``), once the kernel counts them runnable."""
    with busy_cpus(n):
        deadline = time.monotonic() + 30
        while idle_cores(CPUS) > 1 and time.monotonic() < deadline:
            time.sleep(0.05)  # (the interpreters start)
        yield


def _threads_now() -> int:
    import torch

    return int(torch.get_num_threads())


def test_idle_cores_counts_the_cores_other_work_holds() -> None:
    assert 1 <= idle_cores(CPUS) <= CPUS
    assert idle_cores(1) == 1
    with spinning(CPUS):
        assert idle_cores(CPUS) == 1
    assert idle_cores(CPUS, loadavg="/nonexistent") == CPUS  # unreadable: torch's default


def test_the_backend_uses_the_idle_cores_only_when_threads_is_0() -> None:
    options = GenerationOptions(max_new_tokens=4)
    auto, fixed = HFBackend(None, options=options), HFBackend(None, options=options, threads=CPUS)

    async def complete(backend: HFBackend) -> int:
        (out,) = await backend.complete(["def add(a, b):\n    return "])
        assert isinstance(out, str)
        return run_on_model_thread(_threads_now)

    with spinning(CPUS):
        assert asyncio.run(complete(auto)) == 1
        assert asyncio.run(complete(fixed)) == CPUS  # a number given is kept, load or not


def test_a_benchmarks_backend_keeps_torchs_threads_under_load() -> None:
    """``cctest bench`` builds its backend ``steady``: a greedy completion can change with the
    number of threads, and a benchmark's must not depend on the machine's load."""
    from cctest.backends import create_backend
    from cctest.config import Settings

    steady = create_backend(Settings(max_new_tokens=4), steady=True)
    assert isinstance(steady, HFBackend)

    async def complete() -> int:
        (out,) = await steady.complete(["def add(a, b):\n    return "])
        assert isinstance(out, str)
        return run_on_model_thread(_threads_now)

    with spinning(CPUS):
        assert asyncio.run(complete()) == steady.loaded.most_threads
