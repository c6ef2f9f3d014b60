"""``cctest serve`` in the test's own event loop, on a free loopback port."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from cctest.backends.hf import HFBackend
from cctest.serve import BATCHER_KEY, Batcher, start_server


@asynccontextmanager
async def running(model: HFBackend, **options: Any) -> AsyncIterator[tuple[str, Batcher]]:
    """Serve ``model`` (``options``: ``create_app``'s); yields the base URL and the batcher."""
    runner, url = await start_server(model, "127.0.0.1", 0, **options)
    try:
        yield url, runner.app[BATCHER_KEY]
    finally:
        await runner.cleanup()
