"""Fixtures of the suites' tests: a real aiohttp server on 127.0.0.1 playing a scripted model."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator

import pytest
from aiohttp import web


@pytest.fixture
def serve_app() -> Iterator[Callable[[web.Application], str]]:
    """``serve_app(app)`` serves ``app`` on 127.0.0.1 in a thread with its own loop and returns
    its URL; the servers stop when the test ends."""
    stops: list[tuple[asyncio.AbstractEventLoop, asyncio.Event, threading.Thread]] = []

    def serve(app: web.Application) -> str:
        ready = threading.Event()
        state: dict[str, object] = {}

        async def main() -> None:
            runner = web.AppRunner(app, access_log=None)
            await runner.setup()
            site = web.TCPSite(runner, "127.0.0.1", 0)
            await site.start()
            state["port"] = runner.addresses[0][1]
            state["stop"] = stop = asyncio.Event()
            ready.set()
            await stop.wait()
            await runner.cleanup()

        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_until_complete, args=(main(),), daemon=True)
        thread.start()
        assert ready.wait(10)
        stop = state["stop"]
        assert isinstance(stop, asyncio.Event)
        stops.append((loop, stop, thread))
        return f"http://127.0.0.1:{state['port']}"

    yield serve
    for loop, stop, thread in stops:
        loop.call_soon_threadsafe(stop.set)
        thread.join(10)
