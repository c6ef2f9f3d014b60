"""``cctest proxy`` in front of servers that fail, stall or drop the connection, or are not there:
the plugin gets an error in its API's own shape and status, never later than the deadline, and a
plugin that goes away cancels its upstream requests."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp
import ollama
import openai
import pytest
from proxy_helpers import Seen, faulty_app, proxying, serving

from cctest.config import Settings

BEFORE = "def count(items):\n    total = 0\n    for item in items:\n        "
OPENAI_BODY = {"model": "m", "prompt": BEFORE, "suffix": "\n    return total\n", "max_tokens": 16}
OLLAMA_BODY = {"model": "m", "prompt": BEFORE, "suffix": "\n    return total\n", "stream": False}
TGI_BODY = {"inputs": "<fim_prefix>" + BEFORE + "<fim_suffix>\n<fim_middle>", "parameters": {}}
BODIES = {"openai": ("/v1/completions", OPENAI_BODY), "ollama": ("/api/generate", OLLAMA_BODY),
          "tgi": ("/generate", TGI_BODY)}  # fmt: skip


def _shape(provider: str, data: Any) -> bool:
    """Whether ``data`` is an error in the provider's own shape."""
    if provider == "openai":
        return set(data["error"]) == {"message", "type", "param", "code"}
    if provider == "ollama":
        return isinstance(data["error"], str) and set(data) == {"error"}
    return isinstance(data["error"], str) and isinstance(data["error_type"], str)


async def test_an_upstream_error_comes_back_as_the_upstream_sent_it() -> None:
    async with (
        serving(faulty_app(Seen(), "fail")) as up,
        proxying(up, settings=Settings(mutants=3)) as (url, _),
    ):
        client = openai.AsyncOpenAI(base_url=f"{url}/v1", api_key="k", max_retries=0)
        with pytest.raises(openai.InternalServerError) as caught:
            await client.completions.create(
                model="m", prompt=BEFORE, suffix="\n    return total\n", max_tokens=8
            )
        async with aiohttp.ClientSession() as s, s.get(up + "/v1/models") as direct:
            expected = await direct.read()
    assert caught.value.status_code == 500
    assert json.dumps(caught.value.body).encode() == json.dumps(json.loads(expected)["error"]).encode()


@pytest.mark.parametrize("provider", ["openai", "ollama", "tgi"])
async def test_a_stalled_upstream_is_a_504_in_the_apis_shape_at_the_deadline(provider: str) -> None:
    seen = Seen()
    path, body = BODIES[provider]
    async with (
        serving(faulty_app(seen, "stall")) as up,
        proxying(up, provider=provider, settings=Settings(mutants=3, timeout=0.5)) as (url, _),
    ):
        async with aiohttp.ClientSession() as s:
            # a request that outlives the deadline by far would fail this (the test's own bound)
            async with asyncio.timeout(20), s.post(url + path, json=body) as r:
                status, data = r.status, await r.json()
            async with asyncio.timeout(20), s.get(url + "/v1/models") as r:  # passed through: the same
                assert r.status == 504
    assert status == 504 and _shape(provider, data)
    assert "within 0.5 s" in json.dumps(data)
    for _ in range(200):  # the proxy gave the stalled requests up: the upstream saw them cancelled
        if seen.cancelled == len(seen.requests):
            break
        await asyncio.sleep(0.05)
    # deciding early (the default): the prompt and its 3 mutants each streamed on its own; + the GET
    assert seen.cancelled == len(seen.requests) == 5


@pytest.mark.parametrize("provider", ["openai", "ollama", "tgi"])
async def test_a_dropped_or_refused_connection_is_a_502_in_the_apis_shape(provider: str) -> None:
    path, body = BODIES[provider]
    async with serving(faulty_app(Seen(), "drop")) as up, proxying(up, provider=provider) as (url, _):
        async with aiohttp.ClientSession() as s, s.post(url + path, json=body) as r:
            assert r.status == 502 and _shape(provider, await r.json())
    async with proxying(up, provider=provider) as (url, _):  # nothing listens there any more
        async with aiohttp.ClientSession() as s, s.post(url + path, json=body) as r:
            assert r.status == 502 and _shape(provider, await r.json())


async def test_the_ollama_client_reads_the_error() -> None:
    async with (
        serving(faulty_app(Seen(), "stall")) as up,
        proxying(up, provider="ollama", settings=Settings(mutants=2, timeout=0.5)) as (url, _),
    ):
        with pytest.raises(ollama.ResponseError) as caught:
            await ollama.AsyncClient(host=url).generate(model="m", prompt=BEFORE, suffix="\n", stream=False)
    assert caught.value.status_code == 504 and "within 0.5 s" in caught.value.error


@pytest.mark.parametrize("path", ["/v1/completions", "/v1/chat/completions"])
async def test_a_plugin_that_disconnects_cancels_its_upstream_requests(path: str) -> None:
    seen = Seen()
    async with (
        serving(faulty_app(seen, "stall")) as up,
        proxying(up, settings=Settings(mutants=3, timeout=600)) as (url, _),
    ):
        async with aiohttp.ClientSession() as s:
            body = OPENAI_BODY if path == "/v1/completions" else {"model": "m", "messages": []}
            request = asyncio.create_task(s.post(url + path, json=body))
            await asyncio.wait_for(seen.started.wait(), 20)
            request.cancel()  # the plugin goes away (a newer keystroke)
            with pytest.raises(asyncio.CancelledError):
                await request
        for _ in range(400):
            if seen.cancelled and seen.cancelled == len(seen.requests):
                break
            await asyncio.sleep(0.05)
    assert seen.cancelled == len(seen.requests) >= 1
