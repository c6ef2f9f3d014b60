"""The same mutant choice everywhere (``prefill_budget``, docs/mutators.md): the language server,
with the http backend, asks a real HTTP completion server for exactly the rows the engine prepares
in-process, at a cursor where the budget changes the choice."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from aiohttp import web
from lsp_helpers import inline, session

from cctest.backends.http import HTTPBackend
from cctest.config import Settings
from cctest.engine import Engine
from cctest.types import Prompt

pytestmark = pytest.mark.timeout(180)

FILLER = "".join(
    f"def helper_{i}(values):\n    total = 0\n    for value in values:\n        total += value * {i}\n"
    "    return total\n\n\n"
    for i in range(30)
)
BODY = "".join(f"    step_{i} = scale + offset * {i} - len(items)\n" for i in range(40))
BEFORE = (
    FILLER + "def summarize(items, scale, offset):\n    count = len(items)\n" + BODY + "    result = count + "
)
AFTER = "\n    return result\n"


async def test_the_language_server_asks_for_the_rows_the_engine_chooses(tmp_path: Path) -> None:
    prompts: list[str] = []

    async def completions(request: web.Request) -> web.Response:
        body = await request.json()
        got = body["prompt"] if isinstance(body["prompt"], list) else [body["prompt"]]
        prompts.extend(got)
        return web.json_response({"choices": [{"index": i, "text": "1"} for i in range(len(got))]})

    app = web.Application()
    app.router.add_post("/v1/completions", completions)
    runner = web.AppRunner(app)
    await runner.setup()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    await web.TCPSite(runner, "127.0.0.1", port).start()
    url = f"http://127.0.0.1:{port}"
    opts = {"backend": "http", "model": url, "defectLog": str(tmp_path / "d.sqlite3")}
    try:
        async with session(opts, tmp_path, open_source=BEFORE + AFTER) as client:
            line = BEFORE.count("\n")
            await inline(client, line, len(BEFORE) - BEFORE.rfind("\n") - 1)
        async with HTTPBackend(url) as http:
            chosen = Engine(http, Settings()).prepare(Prompt(BEFORE, AFTER))
            unbounded = Engine(http, Settings(prefill_budget=0)).prepare(Prompt(BEFORE, AFTER))
    finally:
        await runner.cleanup()
    assert sorted(set(prompts)) == sorted(chosen.texts) and len(chosen.texts) == 1 + Settings().mutants
    assert chosen.texts != unbounded.texts  # the budget changed the choice at this cursor
