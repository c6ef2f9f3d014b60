"""Who may hold a connection to cctest's HTTP servers (``cctest serve``, ``cctest proxy``), and for
how long: slow and greedy clients bounded, malformed HTTP answered in the server's error shape.

``Limits``: a request's headers must arrive within ``request_timeout`` seconds of the connection
opening (or of the previous answer on a kept-alive connection, so an idle connection is closed
after as long), and its body within as long again (each server reads its bodies under
``request_timeout``); at most ``max_connections`` connections are open at a time, by default the
open-file limit less a reserve, so the server can always accept and answer; at most
``max_per_address`` from one client address. A connection past either cap gets a 503 (429 for
the per-address cap) and is closed.

``Site`` serves an aiohttp runner under those limits. Its connections (``Connection``) answer what
aiohttp's HTTP parser refuses (a bad or duplicate header, ``Content-Length`` with
``Transfer-Encoding``, a header line over 8 KiB, bytes that are not HTTP such as a TLS ClientHello)
with a 400 in the server's error shape (``ErrorShape``), logged in one line, and close the
connection. What the client sent is never echoed back or logged: aiohttp's parser quotes the
offending line (an ``Authorization`` header, its token and all), and only its description of
the fault is kept.

Refused connections, and accepts that fail (EMFILE and the like: ``LoopErrors``), are logged in one
line per ``LOG_EVERY`` seconds with how many there were, never a traceback each.
"""

from __future__ import annotations

import asyncio
import dataclasses
import errno
import logging
import math
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from .errors import ConfigError

log = logging.getLogger(__name__)

REQUEST_TIMEOUT = 30.0  # seconds for a request's headers, and as long again for its body
MAX_PER_ADDRESS = 256  # connections open at a time from one client address
FD_RESERVE = 64  # open files kept free under the limit: the model, logs, accepting to refuse
LOG_EVERY = 10.0  # seconds between two log lines about refused or failed connections

# status, message, kind (the error's type), code: the server's answer in its own error shape
ErrorShape = Callable[[int, str, str, str], web.Response]


def open_file_limit() -> int | None:
    """The process's soft limit on open files, or None where there is none to read."""
    try:
        import resource
    except ImportError:  # not on this platform
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return None if soft == resource.RLIM_INFINITY else int(soft)


def default_max_connections(limit: int | None = None) -> int:
    """Connections a server keeps open at most by default: the open-file limit less a reserve
    (a tenth of it, at least ``FD_RESERVE``), so that it can always accept a connection, answer
    or refuse it, and keep its own files; 10,000 where the limit cannot be read."""
    limit = open_file_limit() if limit is None else limit
    if limit is None:
        return 10_000
    return max(1, limit - max(FD_RESERVE, limit // 10))


def headroom_warning(max_connections: int, files: int | None = None) -> str | None:
    """What to say when ``--max-connections`` leaves fewer open files than the default's reserve
    for anything else (past them, connections wait unanswered); None when it does not."""
    files = open_file_limit() if files is None else files
    if files is None or max_connections <= default_max_connections(files):
        return None
    return (
        f"--max-connections leaves fewer than {files - default_max_connections(files)} of the {files} "
        "files this process may open for anything else; past them, connections wait unanswered."
    )


async def read_body(
    request: web.Request, limit: int, timeout: float, error: ErrorShape, who: str
) -> bytes | web.Response:
    """A request's body, read whole; else the answer that says why not, in the server's error
    shape (``who``: "server" or "proxy", as its messages name it): a 413 for a body over ``limit``
    bytes (at once for a ``Content-Length`` over it, before any of it is read), a 408 for one that
    has not arrived within ``timeout`` seconds of its headers. Either way the connection is closed:
    not a moment more for the rest of that body."""
    length = request.content_length
    try:
        if length is not None and length > limit:
            raise web.HTTPRequestEntityTooLarge(max_size=limit, actual_size=length)
        async with asyncio.timeout(timeout):
            return await request.read()
    except web.HTTPRequestEntityTooLarge:
        log.info("%s %s: 413 a body over %d bytes", request.method, request.path[:200], limit)
        message = f"the request body is larger than the {who}'s limit of {limit} bytes."
        response = error(413, message, "invalid_request_error", "request_too_large")
        response.force_close()
        return response
    except TimeoutError:
        log.info(
            "%s %s: 408 the body did not arrive within %g s", request.method, request.path[:200], timeout
        )
        message = f"the request body did not arrive within {timeout:g} s of its headers."
        response = error(408, message, "invalid_request_error", "request_timeout")
        response.force_close()
        await response.prepare(request)
        await response.write_eof()
        if request.protocol is not None:
            request.protocol.force_close()
        return response


@dataclass(frozen=True)
class Limits:
    """The bounds on clients' connections (``--request-timeout``, ``--max-connections`` and
    ``--max-connections-per-address``)."""

    request_timeout: float = REQUEST_TIMEOUT
    max_connections: int = dataclasses.field(default_factory=default_max_connections)
    max_per_address: int = MAX_PER_ADDRESS

    def __post_init__(self) -> None:
        if not 0 < self.request_timeout < math.inf:
            raise ConfigError(
                f"--request-timeout must be a number of seconds above 0, not {self.request_timeout}."
            )
        if self.max_connections < 1 or self.max_per_address < 1:
            raise ConfigError("--max-connections and --max-connections-per-address must be at least 1.")


class EveryFewSeconds:
    """One log line per ``every`` seconds about an event that may come thousands of times a
    second (a refused connection, a failed accept): the first at once, then the count since."""

    def __init__(self, every: float = LOG_EVERY) -> None:
        self.every = every
        self.count = 0
        self.next = 0.0

    def __call__(self, message: str, *args: object) -> None:
        self.count += 1
        now = time.monotonic()
        if now < self.next:
            return
        log.warning(message + " (%d in the last %g s)", *args, self.count, self.every)
        self.count = 0
        self.next = now + self.every


def url(host: str, port: int) -> str:
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


_ACCEPT_ERRNOS = (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM)


class LoopErrors:
    """The event loop's exception handler while serving: an accept that fails for want of file
    descriptors or memory (asyncio then pauses accepting for a second and tries again) is logged
    in one line per ``LOG_EVERY`` seconds, not with a traceback each time; anything else goes to
    the handler that was there before (asyncio's own by default). A retry that finds the server
    stopped meanwhile (asyncio retries on the closed socket, a ValueError) is logged at debug."""

    def __init__(self, before: Any) -> None:
        self.before = before
        self.accepts = EveryFewSeconds()

    def __call__(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        exc = context.get("exception")
        if isinstance(exc, OSError) and exc.errno in _ACCEPT_ERRNOS:
            self.accepts(
                "cannot accept connections: %s; new connections wait until some close",
                exc.strerror or exc,
            )
        elif isinstance(exc, (OSError, ValueError)) and "_start_serving" in repr(context.get("handle")):
            log.debug("a retried accept found the server stopped: %s", exc)
        elif self.before is not None:
            self.before(loop, context)
        else:
            loop.default_exception_handler(context)


class Gate:
    """The connections open now, in total and per client address, under ``limits``' caps."""

    def __init__(self, limits: Limits, error: ErrorShape) -> None:
        self.limits = limits
        self.error = error
        self.total = 0
        self.per_address: dict[str, int] = {}
        self.refused = EveryFewSeconds()

    def admit(self, address: str) -> bytes | None:
        """Count a new connection in, or the whole answer (a 503 or 429) that refuses it."""
        if self.total >= self.limits.max_connections:
            status, kind = 503, "server_error"
            message = (
                f"the server has its limit of {self.limits.max_connections} connections open; "
                "try again shortly."
            )
        elif self.per_address.get(address, 0) >= self.limits.max_per_address:
            status, kind = 429, "rate_limit_error"
            message = (
                f"{address[:64]} has the limit of {self.limits.max_per_address} connections "
                "per client address open; reuse them or close some."
            )
        else:
            self.total += 1
            self.per_address[address] = self.per_address.get(address, 0) + 1
            return None
        self.refused("refused a connection from %s: %s", address[:64], message)
        response = self.error(status, message, kind, "too_many_connections")
        body = response.body if isinstance(response.body, bytes) else b""
        reason = "Service Unavailable" if status == 503 else "Too Many Requests"
        head = (
            f"HTTP/1.1 {status} {reason}\r\nContent-Type: {response.content_type}; charset=utf-8\r\n"
            f"Content-Length: {len(body)}\r\nRetry-After: 1\r\nConnection: close\r\n\r\n"
        )
        return head.encode() + body

    def release(self, address: str) -> None:
        self.total -= 1
        left = self.per_address.get(address, 1) - 1
        if left > 0:
            self.per_address[address] = left
        else:
            self.per_address.pop(address, None)


def _address(peer: Any) -> str:
    """The client's address (without its port) from a transport's ``peername``."""
    if isinstance(peer, (tuple, list)) and peer:
        return str(peer[0])
    return str(peer)


def fault(message: object) -> str:
    """What aiohttp's parser says of a request it refused, without what the client sent: its
    description of the fault only, never the line it quotes (``b'Authorization: Bearer …'``).

    >>> fault("Invalid header value char:\\n\\n  b'Authorization: Bearer sk-1\\\\x01'\\n  ^")
    'Invalid header value char'
    >>> fault("Got more than 8190 bytes when reading: b'X-Big: aaaa'.")
    'Got more than 8190 bytes when reading'
    >>> fault("Transfer-Encoding can't be present with Content-Length: b'Transfer-Encoding: chunked' ^")
    "Transfer-Encoding can't be present with Content-Length"
    """
    first = str(message).strip().split("\n", 1)[0]
    first = re.split(r"""\s+b?['"]""", first, maxsplit=1)[0]
    return " ".join(first.split()).rstrip(" :.")[:200] or "bad request"


class Connection(web.RequestHandler):
    """aiohttp's handler of one connection, counted by the ``Gate`` (refused past its caps) and
    answering the requests aiohttp's parser refuses in the server's error shape, logged in one
    line without what the client sent (``fault``)."""

    def __init__(self, gate: Gate, manager: web.Server, **options: Any) -> None:
        super().__init__(manager, **options)
        self.gate = gate
        self.address: str | None = None
        self.on_lost: list[Callable[[], None]] = []  # called once the client has gone

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        address = _address(transport.get_extra_info("peername"))
        refusal = self.gate.admit(address)
        if refusal is not None:
            assert isinstance(transport, asyncio.Transport)
            transport.write(refusal)
            transport.close()
            return
        self.address = address
        super().connection_made(transport)

    def connection_lost(self, exc: BaseException | None) -> None:
        if self.address is not None:
            self.gate.release(self.address)
            self.address = None
        lost, self.on_lost = self.on_lost, []
        for call in lost:
            call()
        super().connection_lost(exc)

    def handle_error(
        self,
        request: web.BaseRequest,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        if request.writer.output_size > 0:  # an answer has begun: nothing more can be said
            raise ConnectionError("an answer was being sent when the request failed")
        if status >= 500:
            log.error("a request from %s failed", request.remote, exc_info=exc)
            text, kind = "the server failed on this request; see its log.", "server_error"
        else:
            detail = fault(message or exc or "bad request")
            log.info("a request from %s: %d %s", request.remote, status, detail)
            text, kind = f"the request is not valid HTTP: {detail}.", "invalid_request_error"
        response = self.gate.error(status, text, kind, "bad_http" if status < 500 else "server_error")
        response.force_close()
        return response


class Site(web.BaseSite):
    """A TCP site whose connections are ``Connection`` s under one ``Gate``, answering in the
    server's error shape."""

    def __init__(
        self, runner: web.AppRunner, host: str, port: int, limits: Limits, error: ErrorShape
    ) -> None:
        super().__init__(runner)
        self.host, self.port, self.limits, self.error = host, port, limits, error
        self.runner = runner

    @property
    def name(self) -> str:
        return url(self.host, self.port)

    async def start(self) -> None:
        await super().start()
        server = self.runner.server
        assert server is not None
        loop = asyncio.get_running_loop()
        gate = Gate(self.limits, self.error)
        options = {
            "loop": loop,
            "access_log": None,
            # aiohttp closes a connection waiting for its next request's headers after this long
            "keepalive_timeout": self.limits.request_timeout,
        }
        self._server = await loop.create_server(
            lambda: Connection(gate, server, **options), self.host, self.port
        )


__all__ = [
    "LOG_EVERY",
    "REQUEST_TIMEOUT",
    "Connection",
    "ErrorShape",
    "EveryFewSeconds",
    "Gate",
    "Limits",
    "LoopErrors",
    "Site",
    "default_max_connections",
    "fault",
    "headroom_warning",
    "read_body",
    "open_file_limit",
    "url",
]
