"""The server against a hostile or broken client, over its real stdio: raw bytes, no LSP library.

Each test breaks something (a special file as the document, a broken frame, random bytes, an
absurd setting, a request before ``initialize``) and then checks that the same server process
still answers a valid request. Every loop is bounded, and every wait has a limit far above what
the answer needs (a hang fails instead of blocking the run).
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import sys
from pathlib import Path
from typing import Any

import pytest
from lsp_helpers import SOURCE, URI, rules_options, server_env

from lsp_server.framing import FrameParser

LIMIT_S = 60.0  # a hang guard, not a timing threshold


class RawClient:
    """A server process and a byte-level client: frames out, parsed messages in."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.messages: list[dict[str, Any]] = []
        self._arrived = asyncio.Event()
        self._reader = asyncio.ensure_future(self._read())

    async def _read(self) -> None:
        parser = FrameParser()
        assert self.process.stdout is not None
        while data := await self.process.stdout.read(65536):
            for body in parser.feed(data):
                assert isinstance(body, bytes), f"the server sent a broken frame: {body}"
                self.messages.append(json.loads(body))
                self._arrived.set()

    async def send(self, data: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(data)
        await self.process.stdin.drain()

    async def request(self, msg_id: object, method: str, params: Any = None) -> dict[str, Any]:
        await self.send(frame({"id": msg_id, "method": method, "params": params}))
        return await self.answer(msg_id)

    async def notify(self, method: str, params: Any) -> None:
        await self.send(frame({"method": method, "params": params}))

    async def answer(self, msg_id: object) -> dict[str, Any]:
        async def wait() -> dict[str, Any]:
            while True:
                for m in self.messages:
                    if m.get("id") == msg_id and "method" not in m:
                        return m
                self._arrived.clear()
                assert self.process.returncode is None, "the server died"
                await self._arrived.wait()

        return await asyncio.wait_for(wait(), LIMIT_S)

    async def initialize(self, options: dict[str, Any]) -> None:
        params = {"capabilities": {}, "initializationOptions": options}
        assert "result" in await self.request("init", "initialize", params)
        await self.notify("initialized", {})
        opened = {"uri": URI, "languageId": "python", "version": 1, "text": SOURCE}
        await self.notify("textDocument/didOpen", {"textDocument": opened})

    async def completion(self, msg_id: object, uri: str = URI, line: int = 1, character: int = 4) -> Any:
        params = {"textDocument": {"uri": uri}, "position": {"line": line, "character": character}}
        return await self.request(msg_id, "textDocument/completion", params)

    async def still_answers(self, msg_id: object) -> None:
        """A valid request after whatever came before gets its completion."""
        answer = await self.completion(msg_id)
        assert answer["result"]["items"][0]["textEdit"]["newText"].strip() == "return a + b"


def frame(message: dict[str, Any]) -> bytes:
    body = json.dumps({"jsonrpc": "2.0", **message}).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


@pytest.fixture
async def raw(tmp_path: Path) -> Any:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "lsp_server",
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=(tmp_path / "server.log").open("wb"),
        env=server_env(tmp_path),
    )
    client = RawClient(process)
    try:
        yield client
    finally:
        if process.returncode is None:
            process.kill()
        await process.wait()
        client._reader.cancel()


async def test_unopened_special_and_huge_files_are_not_read(raw: RawClient, tmp_path: Path) -> None:
    await raw.initialize(rules_options(tmp_path))
    fifo = tmp_path / "pipe.py"
    os.mkfifo(fifo)
    huge = tmp_path / "huge.py"
    with huge.open("wb") as f:
        f.truncate(512 * 1024 * 1024)  # sparse: no disk used, but 512 MiB to read
    for i, path in enumerate(["/dev/zero", str(fifo), str(huge)]):
        answer = await raw.completion(f"special{i}", uri=Path(path).as_uri(), line=0, character=0)
        assert answer["result"]["items"] == []
    unopened = tmp_path / "small.py"
    unopened.write_text(SOURCE)
    answer = await raw.completion("small", uri=unopened.as_uri())
    assert answer["result"]["items"][0]["textEdit"]["newText"].strip() == "return a + b"
    await raw.still_answers("after")
    log = (tmp_path / "server.log").read_text()
    assert "is not a regular file" in log and "is over" in log


BROKEN_FRAMES = {
    "negative": b"Content-Length: -5\r\n\r\n{}",
    "non-numeric": b"Content-Length: twelve\r\n\r\n{}",
    "missing": b"Content-Type: application/vscode-jsonrpc\r\n\r\n{}",
    "too large": b'Content-Length: 100000\r\n\r\n{"jsonrpc": "2.0"}',
    "too small": b'Content-Length: 3\r\n\r\n{"jsonrpc": "2.0", "id": 9, "method": "shutdown"}',
}


async def test_every_broken_frame_is_survived(raw: RawClient, tmp_path: Path) -> None:
    await raw.initialize(rules_options(tmp_path))
    for name, data in BROKEN_FRAMES.items():
        await raw.send(data)
        await raw.still_answers(f"after {name}")
    log = (tmp_path / "server.log").read_text()
    assert log.count("LSP framing") >= len(BROKEN_FRAMES)


async def test_a_70_mb_header_line_is_survived(raw: RawClient, tmp_path: Path) -> None:
    await raw.initialize(rules_options(tmp_path))
    line = b"X" * (1 << 20)
    await raw.send(b"Content-Length: 1")
    for _ in range(70):
        await raw.send(line)
    await raw.send(b"\r\n\r\n")
    await raw.still_answers("after the header")


async def test_random_bytes_and_malformed_frames_then_a_valid_request(raw: RawClient, tmp_path: Path) -> None:
    await raw.initialize(rules_options(tmp_path))
    rng = random.Random(1919)
    deep = b"[" * 100_000 + b"]" * 100_000
    pieces = [
        b"Content-Length: %d\r\n\r\n" % len(deep) + deep,
        b"Content-Length: 4\r\n\r\n\xff\xfe\x00\x01",  # not UTF-8
        frame({"id": "no-method"}),
        frame({"method": "textDocument/completion", "id": "bad", "params": {"position": "here"}}),
        b"Content-Length: 12\r\nContent-Length: 13\r\n\r\n",
        b"\r\n\r\n\r\n",
    ]
    for _ in range(40):
        pieces.append(bytes(rng.randrange(256) for _ in range(rng.randrange(1, 2000))))
    rng.shuffle(pieces)
    for piece in pieces:
        await raw.send(piece)
    await raw.send(b"\r\n\r\n")  # ends whatever header the random bytes began
    await raw.still_answers("after the fuzz")
    bad = await raw.answer("bad")
    assert bad["error"]["code"] == -32602 and "data" not in bad["error"]


async def test_a_request_before_initialize_gets_server_not_initialized(
    raw: RawClient, tmp_path: Path
) -> None:
    early = await raw.completion("early")
    assert early["error"]["code"] == -32002
    assert "data" not in early["error"]  # no traceback, no anything
    await raw.initialize(rules_options(tmp_path))
    await raw.still_answers("later")


async def test_an_absurd_debounce_is_refused_and_requests_are_answered(
    raw: RawClient, tmp_path: Path
) -> None:
    await raw.initialize(rules_options(tmp_path, debounceMs=10**20))
    await raw.still_answers("with the default debounce")
    warnings = [m["params"]["message"] for m in raw.messages if m.get("method") == "window/showMessage"]
    assert any("debounce" in w for w in warnings), warnings
    stats = await raw.request("stats", "cctest/stats", {})
    assert stats["result"]["settings"]["debounceMs"] == 0
