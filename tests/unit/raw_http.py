"""Raw loopback HTTP clients for the tests of cctest's servers (``cctest serve``, ``cctest proxy``):
the slow and silent clients that their connection bounds (``cctest.admission``) must close."""

from __future__ import annotations

import asyncio

WAIT = 60.0  # the most a helper waits for the server before failing; never a measure


async def until_closed(reader: asyncio.StreamReader) -> bytes:
    """Everything the server sends until it closes the connection (a failure if it never does)."""
    data = b""
    while chunk := await asyncio.wait_for(reader.read(65536), WAIT):
        data += chunk
    return data


async def trickle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, head: bytes) -> bytes:
    """``head`` sent a byte every 50 ms, well within any request timeout a test sets for each byte
    but not for all of them, until the server closes the connection; what it sent back (nothing
    when it reset the connection)."""
    for byte in head:
        if reader.at_eof() or writer.is_closing():
            break
        try:
            writer.write(bytes([byte]))
            await writer.drain()
        except ConnectionError:
            break
        await asyncio.sleep(0.05)
    try:
        return await until_closed(reader)
    except ConnectionError:
        return b""


__all__ = ["WAIT", "trickle", "until_closed"]
