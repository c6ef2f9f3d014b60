"""The model server behind the proxy: requests passed through unchanged, and the rows of a repair.

``Upstream`` holds the server's base URL, the deadline every request to it has (``timeout``
seconds from the moment the plugin's request arrived) and one connection pool. ``forward`` passes
a request through: method, path, query, headers (``Authorization`` and API-key headers included;
hop-by-hop headers dropped) and body go upstream, and the upstream's status, headers and bytes come
back as they are, streamed chunk by chunk (its body is not unpacked: a gzip answer stays gzip).
Its answer must begin before the deadline; a stream then goes on as long as each chunk comes
within ``timeout`` of the last.

``Rows`` is the ``Backend`` the engine completes the prompt and its mutants with, for one plugin
request: each row is the plugin's own body with the row's text (``Api.row_requests``), sent with
the plugin's headers; a failed row gets a ``BackendError`` in its place (an ``UpstreamRefused`` when
the server answered with an error status, kept with its status and body so the plugin can be
answered with the upstream's own error). Every answer is cut at its natural end as the ``http``
backend cuts it (``cctest.backends.stop``).

Nothing here logs or records a header: the plugin's credentials only travel upstream.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import aiohttp
from aiohttp import web
from multidict import CIMultiDict
from yarl import URL

from ..backends.base import Backend, Decide, Decided, Outcome
from ..backends.stop import trim_completion
from ..backends.streams import (
    STREAM_FORMATS,
    BoundaryStopper,
    Row,
    StreamRefused,
    decide_over_streams,
    events,
    hold,
    interrupted,
    is_stream,
    without_stop,
)
from ..errors import BackendError, BackendResponseError, BackendTimeout, BackendUnavailable
from ..redact import redact_url
from ..safe_text import model_json, model_text
from .apis import Api, Ask

MAX_RESPONSE_BYTES = 4 * 1024 * 1024  # an upstream answer to a row, as the http backend bounds it
CHARS_PER_TOKEN = 64  # a completion is cut at max tokens * this many characters, at least 4096
MIN_COMPLETION_CHARS = 4096
MAX_STREAMS = 64  # rows streamed side by side at most (more: completed whole)
# headers that belong to one connection, never forwarded (RFC 9110 7.6.1), and those the proxy sets
HOP_BY_HOP = frozenset(
    h.lower()
    for h in (
        "Connection",
        "Keep-Alive",
        "Proxy-Authenticate",
        "Proxy-Authorization",
        "Proxy-Connection",
        "TE",
        "Trailer",
        "Transfer-Encoding",
        "Upgrade",
        "Host",
        "Content-Length",
    )
)


def forwarded_headers(headers: Mapping[str, str], *, json_body: bool = False) -> CIMultiDict[str]:
    """The headers of a plugin's request that go upstream (credentials included)."""
    out: CIMultiDict[str] = CIMultiDict()
    for name, value in headers.items():
        lower = name.lower()
        if lower in HOP_BY_HOP or (json_body and lower in ("content-type", "accept-encoding", "accept")):
            continue
        out.add(name, value)
    if json_body:
        out["Content-Type"] = "application/json"
        out["Accept"] = "application/json"
        out["Accept-Encoding"] = "identity"
    return out


def contained(path: str) -> str:
    """A decoded request path with its ``.`` and ``..`` segments resolved, never above its root
    (as a browser resolves them) and empty segments dropped; a trailing ``/`` kept.

    >>> contained("/../pt/echo"), contained("/v1/./a/../../../b/"), contained("/")
    ('/pt/echo', '/b/', '/')
    """
    kept: list[str] = []
    for segment in path.split("/"):
        if segment == "..":
            if kept:
                kept.pop()
        elif segment not in ("", "."):
            kept.append(segment)
    tail = "/" if kept and path.endswith("/") else ""
    return "/" + "/".join(kept) + tail


class UpstreamRefused(BackendResponseError):
    """The upstream answered a row with an error status: kept whole, to answer the plugin with."""

    def __init__(self, message: str, status: int, body: bytes, content_type: str) -> None:
        super().__init__(message)
        self.status = status
        self.body = body
        self.content_type = content_type


@dataclass
class _Answer:
    status: int
    content_type: str
    payload: bytes


class Upstream:
    """The model server (module docstring)."""

    def __init__(self, url: str, *, timeout: float = 30.0) -> None:
        self.url = URL(url.rstrip("/"))
        self.shown = redact_url(str(self.url))
        self.timeout = float(timeout)
        self._session: aiohttp.ClientSession | None = None

    def session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            # auto_decompress off: a passed-through body goes back exactly as the upstream sent it
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=0, force_close=False), auto_decompress=False
            )
        return self._session

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()

    def target(self, path_qs: str) -> URL:
        """The upstream URL of a plugin's path (and query): the upstream's own path first, the
        plugin's path decoded and its dot segments resolved within it (``contained``), so that no
        ``..``, ``%2e%2e`` or ``%2f`` climbs out of the upstream's path."""
        rel = URL(path_qs)
        base = self.url.path.rstrip("/")
        return self.url.with_path(base + contained(rel.path)).with_query(rel.query_string or None)

    async def forward(
        self, request: web.Request, body: bytes | None, deadline: float, tee: bytearray | None = None
    ) -> web.StreamResponse:
        """Pass ``request`` through (module docstring); ``body``: its bytes when already read, else
        streamed from the plugin. ``tee``: a copy of the answer's bytes (at most
        ``MAX_RESPONSE_BYTES``) is kept there."""
        data: Any = body if body is not None else (request.content if request.body_exists else None)
        try:
            async with asyncio.timeout_at(deadline):
                resp = await self.session().request(
                    request.method,
                    self.target(request.path_qs),
                    headers=forwarded_headers(request.headers),
                    data=data,
                    allow_redirects=False,
                    timeout=aiohttp.ClientTimeout(total=None, sock_read=self.timeout),
                )
        except TimeoutError as exc:
            raise BackendTimeout(f"{self.shown} gave no answer within {self.timeout:g} s.") from exc
        except aiohttp.ClientError as exc:
            raise BackendUnavailable(f"cannot reach {self.shown} ({type(exc).__name__}).") from exc
        try:
            out = web.StreamResponse(status=resp.status, reason=resp.reason)
            for name, value in resp.headers.items():
                if name.lower() not in HOP_BY_HOP or name.lower() == "content-length":
                    out.headers.add(name, value)
            await out.prepare(request)
            try:
                async for chunk in resp.content.iter_any():
                    if tee is not None and len(tee) <= MAX_RESPONSE_BYTES:
                        tee += chunk
                    await out.write(chunk)
            except (aiohttp.ClientError, TimeoutError):
                # the upstream dropped or stalled mid-answer: the plugin's connection ends too, so
                # it does not take a cut answer for a whole one
                if request.transport is not None:
                    request.transport.close()
                return out
            await out.write_eof()
            return out
        finally:
            resp.release()

    async def post(
        self, path: str, body: dict[str, Any], headers: Mapping[str, str], deadline: float
    ) -> _Answer:
        """One JSON request, its answer read whole (at most ``MAX_RESPONSE_BYTES``) by ``deadline``."""
        try:
            async with asyncio.timeout_at(deadline):
                async with self.session().post(
                    self.target(path), data=json.dumps(body).encode(), headers=headers
                ) as resp:
                    payload = bytearray()
                    async for chunk in resp.content.iter_any():
                        payload += chunk
                        if len(payload) > MAX_RESPONSE_BYTES:
                            raise BackendResponseError(
                                f"{self.shown} sent an answer larger than {MAX_RESPONSE_BYTES // 1024} KiB."
                            )
                    return _Answer(resp.status, resp.headers.get("Content-Type", ""), bytes(payload))
        except TimeoutError as exc:
            raise BackendTimeout(f"{self.shown} gave no completion within {self.timeout:g} s.") from exc
        except aiohttp.ClientPayloadError as exc:
            raise BackendResponseError(f"{self.shown} sent an incomplete answer.") from exc
        except aiohttp.ClientError as exc:
            raise BackendUnavailable(f"cannot reach {self.shown} ({type(exc).__name__}).") from exc


class Rows(Backend):
    """The rows of one repaired request, completed by the upstream (module docstring)."""

    name = "proxy"

    def __init__(
        self, upstream: Upstream, api: Api, ask: Ask, headers: Mapping[str, str], deadline: float
    ) -> None:
        self.upstream, self.api, self.ask, self.deadline = upstream, api, ask, deadline
        self.headers = forwarded_headers(headers, json_body=True)
        self.answers: dict[int, Any] = {}  # row -> the upstream's JSON answer that carried it
        self.max_chars = max(MIN_COMPLETION_CHARS, CHARS_PER_TOKEN * ask.max_tokens)
        stops = ask.layout.template.stops if ask.layout.template is not None else ()
        self.stop = (*ask.stop, *stops)
        # the early decision (``complete_deciding``): the streamed rows, the chosen one, and an
        # event set each time the chosen row grows or ends (``Proxy`` streams it on to the plugin)
        self.streams: list[Row] = []
        self.chosen: int | None = None
        self.decided = asyncio.Event()
        self.progress = asyncio.Event()
        self.streamed_pieces = 0  # events read from the upstream, every row together

    def describe(self) -> str:
        return f"proxy {self.api.name} {self.upstream.shown}" + (
            f" model {self.ask.model}" if self.ask.model else ""
        )

    # FimLayout: the engine spares the shown suffix from renames where the model reads it first
    def fim_used(self) -> str | None:
        return None if self.ask.layout.kind == "none" else self.ask.layout.describe()

    @property
    def reads_suffix_first(self) -> bool:
        return self.ask.layout.reads_suffix_first

    def suffix_shown(self, prompt: str, suffix: str) -> str:
        return suffix

    async def complete(
        self, prompts: Sequence[str], *, suffixes: Sequence[str] | None = None
    ) -> list[Outcome]:
        tails = list(suffixes) if suffixes is not None else [""] * len(prompts)
        requests = self.api.row_requests(self.ask, prompts, tails)
        out: list[Outcome] = [BackendError("not asked")] * len(prompts)

        async def one(path: str, body: dict[str, Any], rows: tuple[int, ...]) -> None:
            try:
                data, texts = await self._texts(path, body, len(rows))
            except BackendError as exc:
                for i in rows:
                    out[i] = exc
                return
            for i, text in zip(rows, texts, strict=True):
                self.answers[i] = data
                out[i] = trim_completion(prompts[i], model_text(text)[: self.max_chars], self.stop)

        await asyncio.gather(*(one(r.path, r.body, r.rows) for r in requests))
        return out

    async def _texts(self, path: str, body: dict[str, Any], n: int) -> tuple[Any, list[str]]:
        answer = await self.upstream.post(path, body, self.headers, self.deadline)
        if answer.status != 200:
            raise UpstreamRefused(
                f"{self.upstream.shown} answered {answer.status}.",
                answer.status,
                answer.payload,
                answer.content_type,
            )
        try:
            data = model_json(json.loads(answer.payload))
            return data, self.api.texts(data, n)
        except (ValueError, KeyError, IndexError, TypeError, AttributeError, RecursionError) as exc:
            raise BackendResponseError(f"{self.upstream.shown} answered without a completion.") from exc

    async def complete_deciding(
        self,
        prompts: Sequence[str],
        *,
        suffixes: Sequence[str] | None = None,
        after: int,
        decide: Decide,
    ) -> Decided:
        """``complete``, deciding early over streams as ``HTTPBackend.complete_deciding`` does:
        every row is the plugin's body with the row's text asked as a stream of its own; once each
        has ``after`` tokens or has ended, ``decide`` picks the row to finish, the others' streams
        are closed (the upstream stops writing them) and the chosen one is read to its end, each
        of its pieces announced (``progress``) as it comes. An upstream that refuses streams, or
        too many rows, get whole completions (``complete``)."""
        if after <= 0 or not 1 < len(prompts) <= MAX_STREAMS:
            return Decided(await self.complete(prompts, suffixes=suffixes), None)
        tails = list(suffixes) if suffixes is not None else [""] * len(prompts)
        fmt = STREAM_FORMATS[self.api.name]
        requests = [self.api.row_requests(self.ask, [p], [t])[0] for p, t in zip(prompts, tails, strict=True)]
        self.streams = [Row(BoundaryStopper(p, self.stop), self.max_chars) for p in prompts]

        def deciding(outcomes: list[Outcome]) -> int | None:
            self.chosen = decide(outcomes)
            self.decided.set()
            self.progress.set()
            return self.chosen

        async def pump(i: int, row: Row) -> None:
            request = requests[i]
            headers = CIMultiDict(self.headers)
            headers["Accept"] = "text/event-stream, application/x-ndjson, application/json"
            try:
                async with self.upstream.session().post(
                    fmt.url(self.upstream.target(request.path)),
                    data=json.dumps(fmt.body(without_stop(request.body))).encode(),
                    headers=headers,
                ) as resp:
                    try:
                        await self._read_stream(i, resp, fmt, row, after)
                        await hold(row)
                    except asyncio.CancelledError:
                        resp.close()  # the connection closes: the upstream stops writing the row
                        raise
            except asyncio.CancelledError:
                raise
            except BackendError as exc:
                row.end(exc)
            except (aiohttp.ClientError, ValueError) as exc:
                row.end(
                    BackendUnavailable(f"the stream from {self.upstream.shown} broke ({type(exc).__name__}).")
                )
            row.end()
            if i == self.chosen:
                self.progress.set()

        def timeout() -> BackendError:
            return BackendTimeout(
                f"{self.upstream.shown} gave no completion within {self.upstream.timeout:g} s."
            )

        try:
            got = await decide_over_streams(self.streams, pump, after, deciding, self.deadline, timeout)
        finally:
            self.decided.set()
            self.progress.set()
        if got.refused is not None:
            self.streams, self.chosen = [], None
            return Decided(await self.complete(prompts, suffixes=suffixes), None)
        return Decided(got.outcomes, got.chosen, got.cut)

    async def _read_stream(
        self, i: int, resp: aiohttp.ClientResponse, fmt: Any, row: Row, after: int
    ) -> None:
        if resp.status != 200:
            payload = await resp.content.read(MAX_RESPONSE_BYTES)
            args = (resp.status, payload, resp.headers.get("Content-Type", ""))
            message = f"{self.upstream.shown} answered {resp.status}."
            row.end(
                StreamRefused(message)
                if resp.status in (400, 404, 405, 415, 422)
                else UpstreamRefused(message, *args)
            )
            return
        if not is_stream(resp.headers.get("Content-Type", ""), fmt.framing):
            data = model_json(json.loads(await resp.content.read(MAX_RESPONSE_BYTES)))
            self.answers[i] = data
            row.whole = True
            row.add(self.api.texts(data, 1)[0], "stop", after)
            return
        async for data in events(resp, fmt.framing, MAX_RESPONSE_BYTES):
            try:
                piece, finish = fmt.piece(data)
            except (KeyError, IndexError, TypeError, AttributeError) as exc:
                raise BackendResponseError(
                    f"{self.upstream.shown} sent a stream event without a completion."
                ) from exc
            self.streamed_pieces += 1
            ended = row.add(piece, finish, after)
            if i == self.chosen:
                self.progress.set()
            if ended:
                return
        raise interrupted(self.upstream.shown)

    def shape_source(self) -> Any:
        """The upstream answer the plugin's answer is built on (ids, model name, usage): the
        original row's, else any row's."""
        if 0 in self.answers:
            return self.answers[0]
        return next(iter(self.answers.values()), None)


__all__ = [
    "HOP_BY_HOP",
    "MAX_STREAMS",
    "Rows",
    "Upstream",
    "UpstreamRefused",
    "contained",
    "forwarded_headers",
]
