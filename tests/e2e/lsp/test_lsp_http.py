"""Backend failures through the server, with a real HTTP completion server that the test starts,
stops and starts again: down → an empty answer and ONE log message; slow → the same after the
timeout; back up → answers again, without restarting the language server."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import pytest
from aiohttp import web
from lsp_helpers import as_dict, custom, inline, session
from lsprotocol import types as lsp

from cctest.backends.rules import RuleBackend

pytestmark = pytest.mark.timeout(120)

# the prompt is everything before the cursor, so the slow function comes last
TEXT = "def one(a, b):\n    \n\ndef two(c, d):\n    \n\ndef four(f, g):\n    \n\ndef three(e, SLOW):\n    \n"


class CompletionServer:
    """A tiny OpenAI-style /v1/completions server answering like the rule backend."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.rules = RuleBackend()
        self.runner: web.AppRunner | None = None
        self.requests = 0

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.requests += 1
        # every variant of the last function is slow (a parameter name would not do: REP renames
        # it, and the engine would rightly repair from the fast mutants)
        if "def three" in body["prompt"]:
            await asyncio.sleep(10)
        return web.json_response({"choices": [{"text": self.rules.complete_one(body["prompt"])}]})

    async def start(self) -> None:
        app = web.Application()
        app.router.add_post("/v1/completions", self.handle)
        self.runner = web.AppRunner(app)
        await self.runner.setup()
        await web.TCPSite(self.runner, "127.0.0.1", self.port, reuse_address=True).start()

    async def stop(self) -> None:
        assert self.runner is not None
        await self.runner.cleanup()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def errors(client) -> list[str]:  # type: ignore[no-untyped-def]
    return [m.message for m in client.log_messages if m.type == lsp.MessageType.Error]


async def test_down_slow_and_back(tmp_path: Path) -> None:
    port = free_port()
    http = CompletionServer(port)
    await http.start()
    opts = {
        "backend": "http",
        "model": f"http://127.0.0.1:{port}",
        "mutants": 2,
        "timeout": 3,
        "defectLog": str(tmp_path / "d.sqlite3"),
    }
    try:
        async with session(opts, tmp_path, open_source=TEXT) as client:
            [item] = (await inline(client, 1, 4)).items
            assert item.insert_text == "return a + b" and http.requests >= 1

            await http.stop()  # the model server goes away
            assert len((await inline(client, 4, 4)).items) == 0
            assert len((await inline(client, 7, 4)).items) == 0
            await asyncio.sleep(0.2)
            assert len(errors(client)) == 1 and "cannot connect" in errors(client)[0]

            await http.start()  # and comes back: no restart of the language server needed
            [item] = (await inline(client, 4, 4)).items
            assert item.insert_text == "return c + d"
            await asyncio.sleep(0.2)
            assert any("answers again" in m.message for m in client.log_messages)

            # a server slower than the timeout: an empty answer, a new failure streak, one message
            assert len((await inline(client, 10, 4)).items) == 0
            await asyncio.sleep(0.2)
            assert len(errors(client)) == 2
            stats = as_dict(await custom(client, "cctest/stats"))
            assert stats["failures"] == 3 and stats["backend"].startswith("http openai http://127.0.0.1")
            [item] = (await inline(client, 7, 4)).items
            assert item.insert_text == "return f + g"
    finally:
        if http.runner is not None:
            await http.runner.cleanup()


async def test_a_clean_shutdown_closes_the_http_backend_s_connections(tmp_path: Path) -> None:
    """Every clean shutdown (``shutdown``, then ``exit``) of a server on the http backend logged
    aiohttp's "Unclosed client session" and "Unclosed connector": the backend's connection pool
    was left to the garbage collector. The server closes it when asked to shut down."""
    port = free_port()
    http = CompletionServer(port)
    await http.start()
    log = tmp_path / "server.log"
    opts = {
        "backend": "http",
        "model": f"http://127.0.0.1:{port}",
        "mutants": 2,
        "defectLog": str(tmp_path / "d.sqlite3"),
    }
    try:
        async with session(opts, tmp_path, open_source=TEXT, server_args=("--log-file", str(log))) as client:
            [item] = (await inline(client, 1, 4)).items  # the backend's pool now holds a connection
            assert item.insert_text == "return a + b" and http.requests >= 1
            await asyncio.wait_for(client.shutdown_session(), 60)  # shutdown, exit, and the process ends
            assert client._server is not None and client._server.returncode == 0
    finally:
        await http.stop()
    text = log.read_text()
    assert "backend ready: http" in text  # the log is the server's
    assert "Unclosed" not in text, text
