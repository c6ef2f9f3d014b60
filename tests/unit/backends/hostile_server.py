"""A hostile completion server on 127.0.0.1 for the HTTP backend's fault tests.

Each fault is an OpenAI-shaped ``/v1/completions`` endpoint under its own base path, so a test
points the backend at ``f"{base}/{fault}"``:

``never``      accepts the request and never answers (until the server stops)
``drip``       sends the headers and then one byte of a JSON answer every 50 ms, for ever
``huge``       a valid JSON answer whose completion is 50 MB (with a Content-Length)
``huge-chunked``  the same, streamed in chunks without a Content-Length
``bomb``       a gzip body of about 1 MB on the wire that unpacks to 1 GiB of zero bytes
``deep``       a JSON body nested 200,000 levels deep (``[[[[…]]]]``)
``long``       a valid, 3 MB answer whose completion is a million short lines

``hits[fault]`` counts the requests each endpoint received. Every wait is bounded by the
server's stop event, so no test can hang on it.
"""

from __future__ import annotations

import asyncio
import json
import struct
import zlib
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from functools import cache

from aiohttp import web

HUGE_TEXT_BYTES = 50 * 1024 * 1024
BOMB_UNPACKED = 1 << 30  # 1 GiB
DEEP = 200_000
LONG_LINES = 1_000_000
_MIB = 1 << 20


@cache
def gzip_bomb() -> bytes:
    """A single-member gzip file of ``BOMB_UNPACKED`` zero bytes, about 1 MB long.

    Deflating 1 GiB takes seconds; instead one MiB is deflated with a full flush, which makes
    every later MiB's block the same bytes, and that block is repeated."""
    deflate = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    zeros = bytes(_MIB)
    first = deflate.compress(zeros) + deflate.flush(zlib.Z_FULL_FLUSH)
    block = deflate.compress(zeros) + deflate.flush(zlib.Z_FULL_FLUSH)
    assert deflate.compress(zeros) + deflate.flush(zlib.Z_FULL_FLUSH) == block
    last = deflate.flush(zlib.Z_FINISH)
    crc = 0
    for _ in range(BOMB_UNPACKED // _MIB):
        crc = zlib.crc32(zeros, crc)
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"
    trailer = struct.pack("<II", crc, BOMB_UNPACKED & 0xFFFFFFFF)
    return header + first + block * (BOMB_UNPACKED // _MIB - 1) + last + trailer


def _answer(text: str) -> bytes:
    return json.dumps({"choices": [{"index": 0, "text": text, "finish_reason": "length"}]}).encode()


@dataclass
class Hostile:
    base: str
    hits: Counter[str] = field(default_factory=Counter)
    stop: asyncio.Event = field(default_factory=asyncio.Event)


@asynccontextmanager
async def hostile_server() -> AsyncIterator[Hostile]:
    """Start the hostile server on a free loopback port; yields its base URL and counters."""
    state = Hostile(base="")

    async def never(request: web.Request) -> web.StreamResponse:
        state.hits["never"] += 1
        await state.stop.wait()
        return web.Response(status=503)

    async def drip(request: web.Request) -> web.StreamResponse:
        state.hits["drip"] += 1
        resp = web.StreamResponse(headers={"Content-Type": "application/json"})
        await resp.prepare(request)
        await resp.write(b'{"choices": [{"text": "')
        while not state.stop.is_set():
            await resp.write(b"x")
            try:
                await asyncio.wait_for(state.stop.wait(), 0.05)
            except asyncio.TimeoutError:
                pass
        return resp

    async def stream_huge(request: web.Request, *, chunked: bool) -> web.StreamResponse:
        # written a MiB at a time, so the server itself holds little of it
        head, tail = b'{"choices": [{"text": "', b'"}]}'
        resp = web.StreamResponse(headers={"Content-Type": "application/json"})
        if chunked:
            resp.enable_chunked_encoding()
        else:
            resp.content_length = len(head) + HUGE_TEXT_BYTES + len(tail)
        await resp.prepare(request)
        await resp.write(head)
        chunk = b"x" * _MIB
        for _ in range(HUGE_TEXT_BYTES // _MIB):
            if state.stop.is_set():
                break
            try:
                await resp.write(chunk)
            except (ConnectionError, RuntimeError):  # the client stopped reading: good
                return resp
        await resp.write(tail)
        return resp

    async def huge(request: web.Request) -> web.StreamResponse:
        state.hits["huge"] += 1
        return await stream_huge(request, chunked=False)

    async def huge_chunked(request: web.Request) -> web.StreamResponse:
        state.hits["huge-chunked"] += 1
        return await stream_huge(request, chunked=True)

    async def bomb(request: web.Request) -> web.StreamResponse:
        state.hits["bomb"] += 1
        return web.Response(
            body=gzip_bomb(), headers={"Content-Type": "application/json", "Content-Encoding": "gzip"}
        )

    async def deep(request: web.Request) -> web.StreamResponse:
        state.hits["deep"] += 1
        return web.Response(body=b"[" * DEEP + b"]" * DEEP, content_type="application/json")

    async def long(request: web.Request) -> web.StreamResponse:
        state.hits["long"] += 1
        return web.Response(body=_answer("1\n" * LONG_LINES), content_type="application/json")

    app = web.Application()
    for name, handler in {
        "never": never,
        "drip": drip,
        "huge": huge,
        "huge-chunked": huge_chunked,
        "bomb": bomb,
        "deep": deep,
        "long": long,
    }.items():
        app.router.add_post(f"/{name}/v1/completions", handler)
    runner = web.AppRunner(app, access_log=None, shutdown_timeout=1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    state.base = f"http://127.0.0.1:{runner.addresses[0][1]}"
    try:
        yield state
    finally:
        state.stop.set()
        await runner.cleanup()
