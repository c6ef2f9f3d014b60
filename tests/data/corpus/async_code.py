# ruff: noqa
"""Corpus: async code. Coroutines, await, async generators, async for/with, gather, async
comprehensions. The checks drive them with asyncio.run."""

import asyncio


async def add_later(a, b, delay=0):
    await asyncio.sleep(delay)
    a += b
    return a


async def gather_sums(pairs):
    results = await asyncio.gather(*(add_later(x, y) for x, y in pairs))
    return list(results)


async def ticker(n):
    for i in range(n):
        await asyncio.sleep(0)
        yield i * i


async def collect(n):
    squares = [s async for s in ticker(n)]
    total = 0
    async for s in ticker(n):
        total += s
    return squares, total


class AsyncResource:
    def __init__(self, log):
        self.log = log

    async def __aenter__(self):
        self.log.append("open")
        return self

    async def __aexit__(self, exc_type, exc, tb):
        self.log.append("close")
        return False

    async def fetch(self, key):
        await asyncio.sleep(0)
        self.log.append(f"fetch {key}")
        return key.upper()


async def use_resource(keys):
    log = []
    async with AsyncResource(log) as res:
        values = [await res.fetch(k) for k in keys]
    return values, log


async def first_failure(values):
    async def check(v):
        await asyncio.sleep(0)
        if v < 0:
            raise ValueError(f"negative: {v}")
        return v

    try:
        return await asyncio.gather(*(check(v) for v in values))
    except ValueError as err:
        return str(err)


async def producer_consumer(items):
    queue = asyncio.Queue()
    consumed = []

    async def consume():
        while (item := await queue.get()) is not None:
            consumed.append(item)

    task = asyncio.create_task(consume())
    for item in items:
        await queue.put(item)
    await queue.put(None)
    await task
    return consumed


# ==== CHECKS (never mutated) ====
import asyncio as _asyncio

from _checks import Checks

checks = Checks()


@checks.case
def coroutines(m):
    a = [1]
    alias = a
    r = _asyncio.run(m.add_later(a, [2]))
    return (
        r is alias,
        alias,
        _asyncio.run(m.add_later(b=2, a=1)),
        _asyncio.run(m.gather_sums([(1, 2), ("a", "b")])),
    )


@checks.case
def async_generators(m):
    return _asyncio.run(m.collect(5)), _asyncio.run(m.use_resource(["x", "y"]))


@checks.case
def async_errors(m):
    return _asyncio.run(m.first_failure([1, 2])), _asyncio.run(m.first_failure([1, -2, 3]))


@checks.case
def async_queue(m):
    return _asyncio.run(m.producer_consumer(["a", 0, 2.5, "", []]))
