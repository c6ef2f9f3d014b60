"""LSP base-protocol framing that survives a broken client: bounded headers, and a way back.

A message is ``Content-Length: N\\r\\n`` (and optionally ``Content-Type: ...\\r\\n``), an empty line,
and N bytes of JSON. pygls's reader (``pygls.io_.run_async``) trusts all of it: a header line
without an end is read into memory whole, and a wrong, missing, negative or non-numeric length
leaves it out of step with the stream, deaf to every later message. ``FrameParser`` is the
same framing with limits and resynchronisation, and no I/O (so it is tested byte by byte);
``read_messages`` is the loop that replaces ``run_async`` in ``CCTestServer``'s ``start_io`` and
``start_tcp``.

Resynchronising: after a broken frame, bytes are dropped up to the next ``Content-Length:`` or
``Content-Type:`` header. A whole ``Content-Length: N`` line cannot occur in a valid JSON body
(outside a string it is not JSON, and a string cannot hold the raw line break that ends it), so
one found inside a body reveals a length that was too large: that frame is dropped there, and
the next one is read.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Awaitable, Callable
from typing import Any

from pygls.protocol import JsonRPCProtocol

log = logging.getLogger("lsp_server.framing")

MAX_HEADER_BYTES = 8 * 1024  # a real header is about 80 bytes
MAX_BODY_BYTES = 64 * 1024 * 1024
CHUNK_BYTES = 64 * 1024

# where a header block may start (case-insensitive, as header names are)
_HEADER_START = re.compile(rb"content-(?:length|type)[ \t]*:", re.IGNORECASE)
# a complete Content-Length line inside a body: the body's length was wrong (in valid JSON, such
# digits could only end a string, and a string ends with a quote, not a line break)
_HEADER_LINE = re.compile(rb"content-length[ \t]*:[ \t]*[0-9]+[ \t]*\r\n", re.IGNORECASE)
_KEEP = len(b"content-length") + 2  # a header name may be cut in two between reads
_DIGITS = re.compile(rb"[0-9]{1,12}")


class FrameError(Exception):
    """A framing problem, in one sentence; the parser has already skipped past it."""


def parse_header(block: bytes) -> int:
    """The body length a header block (without its empty line) announces.

    >>> parse_header(b"Content-Length: 12\\r\\nContent-Type: application/vscode-jsonrpc")
    12
    >>> parse_header(b"Content-Length: -1")
    Traceback (most recent call last):
    ...
    lsp_server.framing.FrameError: the Content-Length '-1' is not a number of bytes.
    """
    lengths = set()
    for line in block.split(b"\r\n"):
        name, sep, value = line.partition(b":")
        if not sep or not name.strip():
            raise FrameError(f"the header line {_show(line)} is not NAME: VALUE.")
        if name.strip().lower() != b"content-length":
            continue
        value = value.strip()
        if not _DIGITS.fullmatch(value):
            raise FrameError(f"the Content-Length {_show(value)} is not a number of bytes.")
        lengths.add(int(value))
    if not lengths:
        raise FrameError("a header without a Content-Length.")
    if len(lengths) > 1:
        raise FrameError("a header with two different Content-Lengths.")
    [length] = lengths
    if length > MAX_BODY_BYTES:
        raise FrameError(f"a body of {length} bytes, over the limit of {MAX_BODY_BYTES}.")
    return length


def _show(data: bytes) -> str:
    text = data[:40].decode("utf-8", "replace")
    return repr(text + ("..." if len(data) > 40 else ""))


class FrameParser:
    """Bytes in (``feed``), message bodies and framing errors out, in stream order.

    Memory stays bounded by ``MAX_HEADER_BYTES`` while reading headers or skipping garbage, and
    by the announced length (at most ``MAX_BODY_BYTES``) while reading a body.
    """

    def __init__(self) -> None:
        self._buf = bytearray()
        self._length: int | None = None  # the body being read, once its header is
        self._scanned = 0  # how much of that body was searched for a header line already
        self._skipping = False  # inside garbage that was already reported

    def feed(self, data: bytes) -> list[bytes | FrameError]:
        self._buf += data
        out: list[bytes | FrameError] = []
        while (item := self._body() if self._length is not None else self._header()) is not None:
            out.append(item)
        return out

    def _header(self) -> bytes | FrameError | None:
        error = self._align()
        if error is not None or not self._buf:
            return error
        end = self._buf.find(b"\r\n\r\n", 0, MAX_HEADER_BYTES + 4)
        if end < 0:
            if len(self._buf) <= MAX_HEADER_BYTES:
                return None  # wait for the rest of the header
            return self._broken(1, f"a header longer than {MAX_HEADER_BYTES} bytes.")
        try:
            self._length = parse_header(bytes(self._buf[:end]))
        except FrameError as exc:
            return self._broken(end + 4, str(exc))
        del self._buf[: end + 4]
        self._scanned = 0
        return self._body()

    def _align(self) -> FrameError | None:
        """Drop what comes before the next header; report it once per run of garbage."""
        match = _HEADER_START.search(self._buf)
        start = match.start() if match else max(0, len(self._buf) - _KEEP)
        if start == 0:
            if match:
                self._skipping = False
            return None
        del self._buf[:start]
        if self._skipping:
            return None
        self._skipping = True
        return FrameError("bytes that are not an LSP header; skipping to the next header.")

    def _broken(self, drop: int, message: str) -> FrameError:
        del self._buf[:drop]
        self._skipping = True  # what follows the broken header (its body) is garbage, said once
        return FrameError(message)

    def _body(self) -> bytes | FrameError | None:
        assert self._length is not None
        length = self._length
        match = _HEADER_LINE.search(self._buf, max(0, self._scanned - 64))
        if match is not None and match.start() < length:
            self._length = None
            return self._broken(match.start(), f"a message shorter than its Content-Length {length}.")
        self._scanned = len(self._buf)
        if len(self._buf) < length:
            return None
        body = bytes(self._buf[:length])
        del self._buf[:length]
        self._length = None
        return body


async def read_messages(
    read: Callable[[], Awaitable[bytes]],
    protocol: JsonRPCProtocol,
    stop_event: threading.Event,
    error_handler: Callable[[Exception, Any], Any] | None = None,
) -> None:
    """pygls's ``run_async`` over ``FrameParser``: read until end of stream or ``stop_event``."""
    parser = FrameParser()
    while not stop_event.is_set():
        data = await read()
        if not data:
            break
        for item in parser.feed(data):
            if isinstance(item, FrameError):
                log.warning("LSP framing: %s", item)
            else:
                _dispatch(protocol, item, error_handler)


def _dispatch(protocol: JsonRPCProtocol, body: bytes, error_handler: Callable[..., Any] | None) -> None:
    try:
        message = json.loads(body, object_hook=protocol.structure_message)
    except (ValueError, RecursionError) as exc:  # not JSON, not UTF-8, or nested past Python's stack
        log.warning("LSP framing: a message that is not JSON was dropped: %s", str(exc)[:200])
        return
    except Exception as exc:
        log.warning("LSP framing: a message could not be read: %s", exc)
        if error_handler:
            error_handler(exc, None)
        return
    try:
        protocol.handle_message(message)
    except Exception as exc:
        log.exception("a message could not be handled")
        if error_handler:
            error_handler(exc, None)


__all__ = ["FrameError", "FrameParser", "MAX_BODY_BYTES", "MAX_HEADER_BYTES", "parse_header", "read_messages"]
