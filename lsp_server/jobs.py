"""The table of running jobs: joins identical requests, supersedes a document's older job,
and cancels a job when the last request waiting for it is cancelled.

A job is keyed by what it computes (prompt, suffix, settings) and belongs to one document. The
rules, from the editor's point of view:

- the same key asked again while its job runs is **joined**: one engine run, many answers (a
  client asking for inline and ordinary completion at the same cursor);
- a new key for the same document **supersedes** the document's job: the user typed on, the
  older answer would be stale; its waiters get ``None``;
- a waiter cancelled by its client (``$/cancelRequest``) leaves; the job is cancelled with its
  **last** waiter, never while another request still waits for it;
- ``cancel_document`` (``didClose``) cancels the document's job.

The table knows nothing of engines or LSP: a job is any coroutine, which is how it is tested.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections import Counter
from collections.abc import Callable, Coroutine, Hashable
from typing import Any, Generic, TypeVar

R = TypeVar("R")


@dataclasses.dataclass
class _Job(Generic[R]):
    task: asyncio.Task[R]
    waiters: int = 0


class JobTable(Generic[R]):
    """Running jobs by key, and each document's latest key; counts ``joined``, ``superseded``
    and ``cancelled`` into the counter it is given."""

    def __init__(self, counters: Counter[str]) -> None:
        self.counters = counters
        self._jobs: dict[Hashable, _Job[R]] = {}
        self._by_document: dict[str, Hashable] = {}

    def __len__(self) -> int:
        return len(self._jobs)

    async def run(self, uri: str, key: Hashable, start: Callable[[], Coroutine[Any, Any, R]]) -> R | None:
        """The result of the job for ``key`` (started with ``start()`` unless one runs); None
        when a newer request for ``uri`` superseded it. Raises what the job raised, and
        CancelledError when this waiter's own request is cancelled."""
        job = self._jobs.get(key)
        if job is None:
            job = self._start(uri, key, start)
        else:
            self.counters["joined"] += 1
        job.waiters += 1
        try:
            # shielded: one waiter's $/cancelRequest must not cancel the job the others wait for
            return await asyncio.shield(job.task)
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is None or not current.cancelling():
                return None  # the job was superseded (or its document closed)
            self.counters["cancelled"] += 1
            if job.waiters == 1 and not job.task.done():
                job.task.cancel()  # the last one waiting for it is gone
            raise
        finally:
            job.waiters -= 1

    def cancel_document(self, uri: str) -> bool:
        """Cancel the job of ``uri``, if one runs (the document was closed)."""
        key = self._by_document.pop(uri, None)
        job = self._jobs.get(key) if key is not None else None
        if job is None:
            return False
        job.task.cancel()
        return True

    def _start(self, uri: str, key: Hashable, start: Callable[[], Coroutine[Any, Any, R]]) -> _Job[R]:
        previous = self._by_document.get(uri)
        if previous is not None and previous != key and previous in self._jobs:
            self._jobs[previous].task.cancel()  # the user typed on: its answer would be stale
            self.counters["superseded"] += 1
        job = _Job(asyncio.ensure_future(start()))
        self._jobs[key] = job
        self._by_document[uri] = key

        def forget(_: asyncio.Task[R]) -> None:
            if self._jobs.get(key) is job:
                del self._jobs[key]
            if self._by_document.get(uri) == key:
                del self._by_document[uri]

        job.task.add_done_callback(forget)
        return job


__all__ = ["JobTable"]
