"""A real aiohttp server on 127.0.0.1 for the tests of HTTP clients (backends, chat, suites)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

from aiohttp import web

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@asynccontextmanager
async def server(routes: dict[str, Handler]) -> AsyncIterator[str]:
    """Serve ``routes`` (POST path -> handler) on a free port; yields the base URL."""
    app = web.Application()
    for path, handler in routes.items():
        app.router.add_post(path, handler)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()
