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

from ..backends.base import Backend, Outcome
from ..backends.stop import trim_completion
from ..errors import BackendError, BackendResponseError, BackendTimeout, BackendUnavailable
from ..redact import redact_url
from ..safe_text import model_text
from .apis import Api, Ask

MAX_RESPONSE_BYTES = 4 * 1024 * 1024  # an upstream answer to a row, as the http backend bounds it
CHARS_PER_TOKEN = 64  # a completion is cut at max tokens * this many characters, at least 4096
MIN_COMPLETION_CHARS = 4096
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
        """The upstream URL of a plugin's path (and query): the upstream's own path first."""
        rel = URL(path_qs)
        base = self.url.path.rstrip("/")
        return self.url.with_path(base + rel.path).with_query(rel.query_string or None)

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
            data = json.loads(answer.payload)
            return data, self.api.texts(data, n)
        except (ValueError, KeyError, IndexError, TypeError, AttributeError, RecursionError) as exc:
            raise BackendResponseError(f"{self.upstream.shown} answered without a completion.") from exc

    def shape_source(self) -> Any:
        """The upstream answer the plugin's answer is built on (ids, model name, usage): the
        original row's, else any row's."""
        if 0 in self.answers:
            return self.answers[0]
        return next(iter(self.answers.values()), None)


__all__ = ["HOP_BY_HOP", "Rows", "Upstream", "UpstreamRefused", "forwarded_headers"]
