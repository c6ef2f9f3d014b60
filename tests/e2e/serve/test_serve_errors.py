"""``cctest serve`` under hostile or careless clients: every error is JSON in OpenAI's shape with
no traceback logged for a client's mistake, a request carries a bounded number of prompts, and a
large request shares the batches with the requests that arrive while it runs."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import aiohttp
import pytest
from serve_helpers import running

from cctest.backends.hf import HFBackend

ERROR_KEYS = {"message", "type", "param", "code"}


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "message"),
    [
        ("GET", "/nowhere", None, 404, "/v1/completions"),
        ("POST", "/v1/chat/nothing", b"{}", 404, "/v1/completions"),
        ("GET", "/v1/completions", None, 405, "POST"),
        ("DELETE", "/health", None, 405, "GET"),
        ("POST", "/v1/completions", b'{"prompt": "' + b"x" * 400_000 + b'"}', 413, "larger than"),
        ("POST", "/v1/completions", b"[" * 100_000 + b"]" * 100_000, 400, "nested too deeply"),
        ("POST", "/v1/completions", b'{"prompt": "x"', 400, "not JSON"),
        ("POST", "/v1/completions", b"\xff\xfe{}", 400, "not JSON"),
        ("POST", "/v1/completions", b'{"prompt": ["a", 1]}', 400, "'prompt'"),
    ],
)
async def test_every_error_is_openai_json_without_a_traceback(
    model: HFBackend,
    caplog: pytest.LogCaptureFixture,
    method: str,
    path: str,
    body: bytes | None,
    status: int,
    message: str,
) -> None:
    caplog.set_level(logging.DEBUG)
    async with running(model, max_body_bytes=300_000) as (url, _):
        async with aiohttp.ClientSession() as session:
            headers = {"Content-Type": "application/json"}
            async with session.request(method, f"{url}{path}", data=body, headers=headers) as r:
                assert r.status == status
                assert r.content_type == "application/json"
                error = (await r.json())["error"]
            async with session.post(f"{url}/v1/completions", json={"prompt": "x = ", "max_tokens": 2}) as r:
                assert r.status == 200  # still serving
    assert set(error) == ERROR_KEYS and message in error["message"], error
    assert error["type"] == "invalid_request_error"
    assert "Traceback" not in caplog.text


async def test_a_bad_sampling_value_is_echoed_short(
    model: HFBackend, caplog: pytest.LogCaptureFixture
) -> None:
    """A 1 MB string as ``temperature``: the 400 names the parameter and quotes only the start
    of the value, so neither the answer nor the log line carries the client's megabyte."""
    caplog.set_level(logging.DEBUG)
    async with running(model) as (url, _):
        async with aiohttp.ClientSession() as session:
            body = {"prompt": "x = ", "temperature": "t" * 1_000_000}
            async with session.post(f"{url}/v1/completions", json=body) as r:
                assert r.status == 400
                error = (await r.json())["error"]
    assert error["param"] == "temperature" and "'temperature' must be" in error["message"]
    assert len(error["message"]) < 300, len(error["message"])
    assert "t" * 1000 not in caplog.text


async def test_a_model_failure_is_a_json_500_and_the_server_keeps_serving(
    model: HFBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with running(model) as (url, batcher):
        real = batcher.backend.generate_safe
        calls = 0

        def broken_once(*args: Any, **kwargs: Any) -> Any:  # a fault a request cannot cause
            nonlocal calls
            calls += 1
            if calls == 1:
                raise RuntimeError("the model broke")
            return real(*args, **kwargs)

        monkeypatch.setattr(batcher.backend, "generate_safe", broken_once)
        async with aiohttp.ClientSession() as session:
            async with session.post(f"{url}/v1/completions", json={"prompt": "x = "}) as r:
                assert r.status == 500
                error = (await r.json())["error"]
            async with session.post(f"{url}/v1/completions", json={"prompt": "x = "}) as r:
                assert r.status == 200
    assert set(error) == ERROR_KEYS and error["type"] == "server_error"


async def test_too_many_prompts_is_a_clear_400(model: HFBackend) -> None:
    async with running(model, max_prompts=8) as (url, batcher):
        async with aiohttp.ClientSession() as session:
            body = {"prompt": ["x = "] * 9, "max_tokens": 2}
            async with session.post(f"{url}/v1/completions", json=body) as r:
                assert r.status == 400
                error = (await r.json())["error"]
            body["prompt"] = ["x = "] * 8
            async with session.post(f"{url}/v1/completions", json=body) as r:
                assert r.status == 200 and len((await r.json())["choices"]) == 8
    assert error["param"] == "prompt" and "at most 8 prompts" in error["message"]
    assert batcher.stats.rows == 8  # the refused request reached no model


async def test_a_large_request_shares_the_batches_with_a_later_small_one(model: HFBackend) -> None:
    """A 96-prompt request is running when a one-prompt request arrives: the small one is
    answered first, in one of the next batches, instead of after all 96 (before, the large
    request was one generate call that everything behind it waited for)."""
    finished: list[str] = []
    async with running(model, max_batch=8, max_prompts=256) as (url, batcher):
        async with aiohttp.ClientSession() as session:

            async def ask(name: str, prompts: list[str]) -> list[str]:
                body = {"prompt": prompts, "max_tokens": 4, "temperature": 0}
                async with session.post(f"{url}/v1/completions", json=body) as r:
                    assert r.status == 200
                    data = await r.json()
                finished.append(name)
                return [c["text"] for c in data["choices"]]

            big = asyncio.create_task(ask("big", [f"value_{i} = " for i in range(96)]))
            for _ in range(3000):  # until the first batch of the big request is done (bounded)
                if batcher.stats.batches or big.done():
                    break
                await asyncio.sleep(0.01)
            small = await ask("small", ["def add(a, b):\n    return "])
            big_texts = await asyncio.wait_for(big, 300)
    assert finished == ["small", "big"]
    assert len(big_texts) == 96 and len(small) == 1
    assert batcher.stats.largest <= 8 and batcher.stats.rows == 97
