"""The server's protocol in-process: answers before initialize, no tracebacks, no leaked futures."""

from __future__ import annotations

import asyncio
import json
import sys
import threading
from typing import Any

from pygls.exceptions import JsonRpcInternalError

from lsp_server.framing import FrameParser, read_messages
from lsp_server.server import CCTestServer

URI = "file:///work/example.py"


class Capture:
    """A pygls writer that keeps what the server sends."""

    def __init__(self) -> None:
        self.parser = FrameParser()
        self.messages: list[dict[str, Any]] = []

    def write(self, data: bytes) -> None:
        self.messages += [json.loads(b) for b in self.parser.feed(data) if isinstance(b, bytes)]

    def close(self) -> None:
        pass

    def answer(self, msg_id: object) -> dict[str, Any]:
        [found] = [m for m in self.messages if m.get("id") == msg_id and "method" not in m]
        return found


def frame(message: dict[str, Any]) -> bytes:
    body = json.dumps({"jsonrpc": "2.0", **message}).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


async def exchange(server: CCTestServer, messages: list[dict[str, Any]]) -> Capture:
    """Feed ``messages`` through the server's reader, let the handlers run, return the answers."""
    capture = Capture()
    server.protocol.set_writer(capture)
    chunks = [b"".join(frame(m) for m in messages), b""]

    async def read() -> bytes:
        return chunks.pop(0)

    await read_messages(read, server.protocol, threading.Event())
    for _ in range(20):
        await asyncio.sleep(0.01)
    return capture


INITIALIZE = {"id": 1, "method": "initialize", "params": {"capabilities": {}}}


def did_change(version: int) -> dict[str, Any]:
    change = {
        "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
        "text": "#",
    }
    return {
        "method": "textDocument/didChange",
        "params": {"textDocument": {"uri": URI, "version": version}, "contentChanges": [change]},
    }


async def test_notifications_leave_no_futures_behind() -> None:
    server = CCTestServer()
    opened = {"uri": URI, "languageId": "python", "version": 1, "text": "x = 1\n"}
    messages = [INITIALIZE, {"method": "initialized", "params": {}}]
    messages += [{"method": "textDocument/didOpen", "params": {"textDocument": opened}}]
    messages += [did_change(v) for v in range(2, 202)]
    capture = await exchange(server, messages)
    assert capture.answer(1)["result"]["capabilities"]
    assert server.workspace.get_text_document(URI).source.startswith("#" * 200)
    assert len(server.protocol._request_futures) == 0  # pygls alone keeps one per notification


async def test_a_request_before_initialize_is_told_so() -> None:
    server = CCTestServer()
    stats = {"id": "early", "method": "cctest/stats", "params": {}}
    capture = await exchange(server, [stats, did_change(2), INITIALIZE])
    error = capture.answer("early")["error"]
    assert error["code"] == -32002 and "data" not in error and "initialize" in error["message"]
    assert "result" in capture.answer(1)


async def test_answers_never_carry_a_traceback() -> None:
    server = CCTestServer()
    capture = Capture()
    server.protocol.set_writer(capture)
    try:
        raise ValueError("boom")
    except ValueError:
        error = JsonRpcInternalError.of(sys.exc_info())
    assert error.data and "traceback" in error.data  # what pygls would send
    server.protocol._send_response("x", error=error.to_response_error())
    sent = capture.answer("x")["error"]
    assert sent == {"code": -32603, "message": "ValueError: boom"}


async def test_json_that_is_not_a_message_is_dropped() -> None:
    server = CCTestServer()
    capture = await exchange(server, [INITIALIZE])
    server.protocol.set_writer(capture)
    junk = b"Content-Length: 2\r\n\r\n[]" + b"Content-Length: 1\r\n\r\n5" + b"Content-Length: 2\r\n\r\n{}"
    chunks = [junk + frame({"id": 3, "method": "shutdown"}), b""]

    async def read() -> bytes:
        return chunks.pop(0)

    await read_messages(read, server.protocol, threading.Event())
    await asyncio.sleep(0.05)
    assert capture.answer(3)["result"] is None
