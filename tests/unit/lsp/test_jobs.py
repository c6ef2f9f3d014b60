"""The job table with plain coroutines as jobs: join, supersede, cancel with the last waiter."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest

from lsp_server.jobs import JobTable


class Work:
    """A job that runs until released, and counts how often it was started."""

    def __init__(self) -> None:
        self.started = 0
        self.release = asyncio.Event()

    async def __call__(self) -> str:
        self.started += 1
        await self.release.wait()
        return "done"


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_identical_requests_are_joined() -> None:
    table: JobTable[str] = JobTable(Counter())
    work = Work()
    first = asyncio.ensure_future(table.run("a.py", "k", work))
    second = asyncio.ensure_future(table.run("a.py", "k", work))
    await settle()
    work.release.set()
    assert await first == await second == "done"
    assert work.started == 1 and table.counters["joined"] == 1 and len(table) == 0


async def test_a_newer_key_supersedes_the_documents_job() -> None:
    table: JobTable[str] = JobTable(Counter())
    old, new = Work(), Work()
    older = asyncio.ensure_future(table.run("a.py", "old", old))
    await settle()
    newer = asyncio.ensure_future(table.run("a.py", "new", new))
    other = asyncio.ensure_future(table.run("b.py", "other", old))  # another document: untouched
    await settle()
    assert await older is None
    new.release.set()
    old.release.set()
    assert await newer == "done" and await other == "done"
    assert table.counters["superseded"] == 1


async def test_the_job_dies_with_its_last_waiter_only() -> None:
    table: JobTable[str] = JobTable(Counter())
    work = Work()
    first = asyncio.ensure_future(table.run("a.py", "k", work))
    second = asyncio.ensure_future(table.run("a.py", "k", work))
    await settle()
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
    assert len(table) == 1  # the second request still waits for it
    second.cancel()
    with pytest.raises(asyncio.CancelledError):
        await second
    await settle()
    assert len(table) == 0 and table.counters["cancelled"] == 2


async def test_closing_a_document_cancels_its_job() -> None:
    table: JobTable[str] = JobTable(Counter())
    work = Work()
    waiting = asyncio.ensure_future(table.run("a.py", "k", work))
    await settle()
    assert table.cancel_document("a.py") and not table.cancel_document("a.py")
    assert await waiting is None and work.started == 1
    await settle()
    assert len(table) == 0


async def test_a_failing_job_raises_in_every_waiter() -> None:
    table: JobTable[str] = JobTable(Counter())

    async def boom() -> str:
        await asyncio.sleep(0)
        raise ValueError("no")

    results = await asyncio.gather(*(table.run("a.py", "k", boom) for _ in range(3)), return_exceptions=True)
    assert all(isinstance(r, ValueError) for r in results)
