"""``cctest serve``'s /v1/chat/completions over the bundled model (no chat template: the plain
documented one), the HTTP backend's chat against it, and a task file run against it in chat."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import aiohttp
from serve_helpers import running

from cctest.backends import create_backend
from cctest.backends.base import PLAIN_CHAT_STOP, GenerationOptions, plain_chat_template
from cctest.backends.hf import HFBackend
from cctest.bench.store import load_run
from cctest.cli import main
from cctest.config import Settings

DATA = Path(__file__).parents[2] / "data" / "tasks" / "small.jsonl"
MESSAGES = [
    {"role": "system", "content": "You write Python."},
    {"role": "user", "content": "Write a function add(a, b) that returns a + b."},
]


async def test_chat_completions_answer_what_the_model_continues_from_the_plain_template(
    model: HFBackend,
) -> None:
    async with running(model) as (url, _), aiohttp.ClientSession() as session:
        body = {"messages": MESSAGES, "max_tokens": 16, "temperature": 0}
        async with session.post(url + "/v1/chat/completions", json=body) as resp:
            assert resp.status == 200
            data = await resp.json()
    assert data["object"] == "chat.completion"
    [choice] = data["choices"]
    assert choice["message"]["role"] == "assistant"
    expected = model.with_options(
        GenerationOptions(max_new_tokens=16, stop=(PLAIN_CHAT_STOP,)), boundaries=False, token_healing=False
    ).generate([plain_chat_template(MESSAGES)])[0]
    assert choice["message"]["content"] == expected.text
    assert data["usage"]["completion_tokens"] == expected.completion_tokens


async def test_bad_chat_requests_are_400_in_openais_shape(model: HFBackend) -> None:
    bad: list[tuple[Any, str]] = [
        ({"messages": []}, "messages"),
        ({"messages": [{"role": "robot", "content": "hi"}]}, "messages"),
        ({"messages": [{"role": "user", "content": 3}]}, "messages"),
        ({"messages": MESSAGES, "max_tokens": 0}, "max_tokens"),
        ({"messages": MESSAGES, "stream": "yes"}, "stream"),
    ]
    async with running(model) as (url, _), aiohttp.ClientSession() as session:
        for body, param in bad:
            async with session.post(url + "/v1/chat/completions", json=body) as resp:
                assert resp.status == 400, body
                error = (await resp.json())["error"]
                assert error["param"] == param and error["type"] == "invalid_request_error"
        # and the server goes on answering
        async with session.post(
            url + "/v1/chat/completions", json={"messages": MESSAGES, "max_tokens": 4}
        ) as resp:
            assert resp.status == 200


async def test_http_backend_chat_through_cctest_serve_matches_the_local_backend(model: HFBackend) -> None:
    local = model.with_options(GenerationOptions(max_new_tokens=16))
    async with running(model) as (url, _):
        settings = Settings(backend="http", model=url, max_new_tokens=16)
        async with create_backend(settings) as backend:
            remote = await backend.chat([MESSAGES, MESSAGES[1:]])
    assert remote == await local.chat([MESSAGES, MESSAGES[1:]])


def test_a_task_file_in_chat_against_cctest_serve(model: HFBackend, tmp_path: Path) -> None:
    async def serve_and_run() -> int:
        async with running(model) as (url, _):
            argv = ["bench", "tasks", "--tasks", str(DATA), "--chat", "--backend", "http", "--model", url]
            argv += [
                "--max-new-tokens",
                "24",
                "--inputs",
                "5",
                "--no-progress",
                "--out",
                str(tmp_path / "run"),
            ]
            return await asyncio.to_thread(main, argv)

    assert asyncio.run(serve_and_run()) == 0
    _, records = load_run(tmp_path / "run")
    assert [r["mode"] for r in records] == ["chat"] * 3
    for r in records:
        [answer] = r["rounds"]
        assert answer["error"] is None and answer["category"] is not None  # answered and judged
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["counts"]["answers"] == 3 and summary["counts"]["backend_errors"] == 0
