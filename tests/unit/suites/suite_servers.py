"""A scripted OpenAI-style chat server for the suites' end-to-end tests (real HTTP, aiohttp)."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Iterator

from aiohttp import web


@contextlib.contextmanager
def chat_server(reply: Callable[[str], str]) -> Iterator[tuple[str, list[str]]]:
    """/v1/chat/completions on 127.0.0.1 in a thread with its own loop: answers ``reply(user
    message)``; yields (base URL, every user message seen)."""
    seen: list[str] = []
    ready = threading.Event()
    state: dict[str, object] = {}

    async def chat(request: web.Request) -> web.Response:
        body = await request.json()
        (user,) = [m["content"] for m in body["messages"] if m["role"] == "user"]
        seen.append(user)
        message = {"role": "assistant", "content": reply(user)}
        return web.json_response({"choices": [{"index": 0, "message": message}]})

    async def serve() -> None:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", chat)
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
        yield f"http://127.0.0.1:{state['port']}", seen
    finally:
        loop.call_soon_threadsafe(state["stop"].set)  # type: ignore[attr-defined]
        thread.join(10)
