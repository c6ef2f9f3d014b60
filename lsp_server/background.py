"""The server's background tasks: kept alive until they finish, and the defect-log writes among
them waited for on request (a read of the log must see the writes already under way)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

#: ``spawn(coro, write=False)``: run ``coro`` in the background (``write``: it writes the log).
Spawn = Callable[..., "asyncio.Task[Any]"]


class BackgroundTasks:
    """Tasks that nobody awaits (background checks, log writes, closing a backend), kept alive."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()
        self._writes: set[asyncio.Task[Any]] = set()

    def __len__(self) -> int:
        return len(self._tasks)

    def spawn(self, coro: Coroutine[Any, Any, Any], *, write: bool = False) -> asyncio.Task[Any]:
        """Run ``coro`` as a task and keep it until it is done; ``write``: ``drain_writes`` waits for it."""
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        if write:
            self._writes.add(task)
            task.add_done_callback(self._writes.discard)
        return task

    async def drain_writes(self) -> None:
        """Wait for the writes already started (and for those they start), whatever they raise."""
        while self._writes:
            await asyncio.gather(*list(self._writes), return_exceptions=True)


__all__ = ["BackgroundTasks", "Spawn"]
