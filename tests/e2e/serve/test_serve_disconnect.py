"""``cctest serve`` and a client that leaves before its plain (not streamed) answer: its rows stop
at the next decoding step, as a streamed request's do, so the model is free for the next
request; and a ``max_tokens`` beyond the model's context is refused at once."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import aiohttp
import pytest

from cctest.backends.hf import HFBackend
from cctest.serve import BATCHER_KEY, CHAT_BATCHER_KEY, Batcher, start_server


@asynccontextmanager
async def serving(model: HFBackend, chat: bool) -> AsyncIterator[tuple[str, Batcher]]:
    """``cctest serve`` on a free loopback port; the base URL and the batcher of the endpoint."""
    runner, url = await start_server(model, "127.0.0.1", 0)
    try:
        yield url, runner.app[CHAT_BATCHER_KEY if chat else BATCHER_KEY]
    finally:
        await runner.cleanup()


# the bundled model repeats "6, " from here on at temperature 0: it never ends before max_tokens
ENDLESS = "numbers = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, "


@pytest.mark.parametrize("path", ["/v1/completions", "/v1/chat/completions"])
async def test_a_plain_request_whose_client_leaves_stops_its_rows(model: HFBackend, path: str) -> None:
    """Dropped while the model writes its row (max_tokens 1e9 kept the model busy and the next
    small request waited past its timeout): the row stops, its tokens are far fewer than the
    budget, and the next request is answered."""
    budget = model.context  # the most a request may ask; a row writes at most half of it
    if path.endswith("chat/completions"):
        body: dict[str, Any] = {"messages": [{"role": "user", "content": ENDLESS}]}
    else:
        body = {"prompt": ENDLESS}
    async with serving(model, chat=path.endswith("chat/completions")) as (url, batcher):
        async with aiohttp.ClientSession() as session:

            async def ask(extra: dict[str, Any]) -> dict[str, Any]:
                async with session.post(f"{url}{path}", json=body | extra) as r:
                    assert r.status == 200, await r.text()
                    return dict(await r.json())

            dropped = asyncio.ensure_future(ask({"max_tokens": budget, "temperature": 0}))
            while batcher.idle:  # the model has started on the row
                await asyncio.sleep(0.01)
            dropped.cancel()  # the client gives up: its connection is closed
            with pytest.raises(asyncio.CancelledError):
                await dropped
            while not batcher.idle:  # the batch has ended, its tokens counted
                await asyncio.sleep(0.02)
            small = await ask({"max_tokens": 2, "temperature": 0})
    assert batcher.stats.cancelled == 1
    assert batcher.stats.tokens - small["usage"]["completion_tokens"] < budget // 4
    assert small["usage"]["completion_tokens"] <= 2


@pytest.mark.parametrize("path", ["/v1/completions", "/v1/chat/completions"])
async def test_max_tokens_beyond_the_context_is_refused(model: HFBackend, path: str) -> None:
    async with serving(model, chat=path.endswith("chat/completions")) as (url, batcher):
        async with aiohttp.ClientSession() as session:
            if path.endswith("chat/completions"):
                body: dict[str, Any] = {"messages": [{"role": "user", "content": "hi"}]}
            else:
                body = {"prompt": "x = "}
            for too_many in (model.context + 1, 10**9):
                async with session.post(f"{url}{path}", json=body | {"max_tokens": too_many}) as r:
                    assert r.status == 400
                    error = (await r.json())["error"]
                assert error["param"] == "max_tokens" and error["type"] == "invalid_request_error"
                assert f"context of {model.context} tokens" in error["message"]
            async with session.post(f"{url}{path}", json=body | {"max_tokens": 2, "temperature": 0}) as r:
                assert r.status == 200
    assert batcher.stats.batches <= 1
