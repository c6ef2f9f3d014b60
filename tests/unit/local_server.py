"""A real aiohttp server on 127.0.0.1 for the tests of HTTP clients (backends, chat, suites)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager

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


@contextmanager
def serve_in_thread(app: web.Application) -> Iterator[str]:
    """Serve ``app`` on a free port of 127.0.0.1 from a thread with its own event loop, for
    synchronous tests (the CLI); yields the base URL and stops the server on exit."""
    ready = threading.Event()
    state: dict[str, object] = {}

    async def serve() -> None:
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
    thread = threading.Thread(target=loop.run_until_complete, args=(serve(),), daemon=True)
    thread.start()
    assert ready.wait(10)
    try:
        yield f"http://127.0.0.1:{state['port']}"
    finally:
        stop = state["stop"]
        assert isinstance(stop, asyncio.Event)
        loop.call_soon_threadsafe(stop.set)
        thread.join(10)


def chat_app(answer: Callable[[str], str], seen: list[str]) -> web.Application:
    """An OpenAI-style chat server answering a fenced block of ``answer(the user's messages)``;
    ``seen`` gets each request's user text."""

    async def chat(request: web.Request) -> web.Response:
        body = await request.json()
        user = "\n".join(m["content"] for m in body["messages"] if m["role"] == "user")
        seen.append(user)
        message = {"role": "assistant", "content": f"```python\n{answer(user)}```"}
        return web.json_response({"choices": [{"index": 0, "message": message}]})

    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat)
    return app
