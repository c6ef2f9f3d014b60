"""The server's two transports, stdio and TCP, both reading through ``framing.read_messages``.

They are pygls's ``start_io`` and ``start_tcp`` (``CCTestServer`` overrides both with these) with
two differences: the framing survives malformed input (see ``lsp_server.framing``), and stdin
is read by the event loop itself where it is a pipe (pygls reads it in a worker thread, one
thread round trip per header line and body). A TCP server listens on the port it is given, or
on a free one for port 0, and says where.

Two attributes of pygls's ``JsonRPCServer`` are set here as its own ``start_io``/``start_tcp`` set
them, because its public ``shutdown()`` reads them and pygls has no public setter: ``_stop_event``
(``shutdown()`` sets it; the read loop stops) and ``_server`` (``shutdown()`` closes the TCP
listener). ``tests/unit/lsp/test_pygls_contract.py`` fails if pygls changes either.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Awaitable, Callable
from typing import Any, BinaryIO

from pygls.io_ import StdoutWriter
from pygls.server import JsonRPCServer

from .framing import CHUNK_BYTES, read_messages

log = logging.getLogger("lsp_server")


def serve_stdio(server: JsonRPCServer, stdin: BinaryIO, stdout: BinaryIO) -> None:
    """Serve one client over a pair of byte streams until it goes (or ``exit``)."""

    async def main() -> None:
        loop = asyncio.get_running_loop()
        read: Callable[[], Awaitable[bytes]]
        try:
            reader = asyncio.StreamReader(limit=CHUNK_BYTES)
            await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), stdin)
            read = lambda: reader.read(CHUNK_BYTES)  # noqa: E731
        except ValueError:  # not a pipe (a regular file, on some platforms): a thread reads it
            chunk = getattr(stdin, "read1", stdin.read)
            read = lambda: loop.run_in_executor(None, chunk, CHUNK_BYTES)  # noqa: E731
        await _run(server, read)

    server._stop_event = threading.Event()
    server.protocol.set_writer(StdoutWriter(stdout))
    _run_until_done(server, main())


def serve_tcp(
    server: JsonRPCServer, host: str, port: int, announce: Callable[[str], Any] | None = None
) -> None:
    """Listen on ``host:port`` (port 0: a free one), serve one client at a time."""

    async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        log.info("a client connected")
        server.protocol.set_writer(writer)  # type: ignore[arg-type]
        await _run(server, lambda: reader.read(CHUNK_BYTES))
        log.info("the client left")
        server.shutdown()

    async def main() -> None:
        listener = await asyncio.start_server(connection, host, port)
        server._server = listener
        where = ", ".join(_address(sock.getsockname()) for sock in listener.sockets)
        log.info("listening on %s", where)
        if announce is not None:
            announce(where)
        async with listener:
            await listener.serve_forever()

    server._stop_event = threading.Event()
    _run_until_done(server, main())


async def _run(server: JsonRPCServer, read: Callable[[], Awaitable[bytes]]) -> None:
    assert server._stop_event is not None
    await read_messages(read, server.protocol, server._stop_event, _error_reporter(server))


def _error_reporter(server: JsonRPCServer) -> Callable[[Exception, Any], None]:
    """pygls's public ``report_server_error``, kept from raising into the read loop."""

    def report(error: Exception, source: Any) -> None:
        try:
            server.report_server_error(error, source)
        except Exception:
            log.warning("a server error could not be reported", exc_info=True)

    return report


def _run_until_done(server: JsonRPCServer, main: Any) -> None:
    try:
        asyncio.run(main)
    except BrokenPipeError:
        log.error("the connection to the client is lost; shutting down")
    except (KeyboardInterrupt, SystemExit, asyncio.CancelledError):
        pass
    finally:
        server.shutdown()


def _address(sockname: Any) -> str:
    host, port = sockname[0], sockname[1]
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


__all__ = ["serve_stdio", "serve_tcp"]
