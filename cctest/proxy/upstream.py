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
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import aiohttp
from aiohttp import web
from multidict import CIMultiDict
from yarl import URL

from ..backends.base import Backend, Decide, Decided, Outcome
from ..backends.slots import MORE_SLOTS, Slots, overflowed
from ..backends.stop import trim_completion
from ..backends.streams import (
    INFILL_STREAM,
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
from .apis import Api, Ask, RowRequest, is_infill
from .layout import SUFFIX_FIELD

log = logging.getLogger(__name__)

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
        self.slots = Slots()  # how many rows the server runs side by side, where known
        self.infill = False  # a suffix field is ignored there: rows go to its /infill (``check_suffix``)
        self._suffix_checked = False

    async def check_suffix(self, headers: Mapping[str, str], ask: Ask, deadline: float) -> None:
        """Once, for a server that answered ``/props`` as llama.cpp's does: whether its
        ``/v1/completions`` reads the ``suffix`` field, by the prompt tokens it reports for one
        token with the field and without it. The same count means it ignores the field (this
        version of llama-server does): rows with a suffix then go to its ``/infill``, when that
        reports the suffix's tokens among the prompt's (one line says so)."""
        if self._suffix_checked or not self.slots.llama:
            return
        self._suffix_checked = True
        sent = forwarded_headers(headers, json_body=True)
        plain = {"prompt": ask.prefix, "max_tokens": 1, "temperature": 0, "stream": False}
        if ask.model:
            plain["model"] = ask.model
        probes = (
            ("/v1/completions", plain),
            ("/v1/completions", {**plain, "suffix": ask.suffix}),
            ("/infill", infill_body({**plain, "suffix": ask.suffix})),
        )

        async def tokens(path: str, body: dict[str, Any]) -> int | None:
            try:
                answer = await self.post(path, body, sent, deadline)
                data = json.loads(answer.payload) if answer.status == 200 else None
            except (BackendError, ValueError, RecursionError):
                return None
            usage = (
                infill_answer(data) if path == "/infill" else data if isinstance(data, dict) else {}
            ).get("usage")
            count = usage.get("prompt_tokens") if isinstance(usage, dict) else None
            return count if isinstance(count, int) and not isinstance(count, bool) else None

        counts = await asyncio.gather(*(tokens(path, body) for path, body in probes))
        plain_n, field_n, infill_n = counts
        if plain_n is None or field_n is None or field_n > plain_n:
            return  # the field is read, or nothing is told
        if infill_n is None or infill_n <= plain_n:
            return  # /infill does not fill in either: as the server answers it directly
        self.infill = True
        log.warning(
            "%s ignores the suffix field (the prompt tokens it reports are the same without it); "
            "completions with code after the cursor are asked at its /infill",
            self.shown,
        )

    async def rows_at_once(self, headers: Mapping[str, str], rows: int) -> int | None:
        """How many rows the server runs side by side when that is fewer than ``rows`` (its
        ``/props``, asked when due, or the rows that fitted its context last: ``Slots``), with one
        line saying so and how to give it more; None when they all fit, or nobody knows."""
        if self.slots.due():
            await self.slots.ask(self.session(), self.url, forwarded_headers(headers, json_body=True))
        at_once = self.slots.at_once
        if at_once is None or at_once >= rows:
            return None
        if self.slots.tell(rows):
            log.warning(
                "%s runs %d rows side by side, fewer than a repair's %d: repairs answer the plain "
                "completion at once and check it afterwards (monitor mode); %s",
                self.shown,
                at_once,
                rows,
                MORE_SLOTS,
            )
        return at_once

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
        self.infill_events: dict[int, dict[str, Any]] = {}  # row -> its /infill events' fields so far
        self.draining: set[int] = set()  # rows ended here, read on for their last event (native)
        self.max_chars = max(MIN_COMPLETION_CHARS, CHARS_PER_TOKEN * ask.max_tokens)
        # the rows go to llama.cpp's /infill, where the server ignores the suffix field; a request
        # that came to /infill (``native``) is asked there as it is
        self.native = is_infill(ask)
        self.infill = (
            upstream.infill and api.name == "openai" and ask.layout.kind == SUFFIX_FIELD and not self.native
        )
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
        at_once = self.upstream.slots.at_once
        if self.infill or (at_once is not None and at_once < len(prompts)):  # one row a request
            requests = [self._one_row(p, t, i) for i, (p, t) in enumerate(zip(prompts, tails, strict=True))]
        else:
            requests = self.api.row_requests(self.ask, prompts, tails)
        out: list[Outcome] = [BackendError("not asked")] * len(prompts)
        gate = asyncio.Semaphore(at_once or len(requests) or 1)

        async def one(path: str, body: dict[str, Any], rows: tuple[int, ...]) -> None:
            try:
                async with gate:
                    data, texts = await self._texts(path, body, len(rows))
            except BackendError as exc:
                for i in rows:
                    out[i] = exc
                return
            for i, text in zip(rows, texts, strict=True):
                self.answers[i] = data
                out[i] = trim_completion(prompts[i], model_text(text)[: self.max_chars], self.stop)

        await asyncio.gather(*(one(r.path, r.body, r.rows) for r in requests))
        self._measure(out)
        return out

    def _one_row(self, prompt: str, suffix: str, i: int) -> RowRequest:
        """Row ``i`` as a request of its own (at ``/infill`` where the server ignores the field)."""
        request = replace(self.api.row_requests(self.ask, [prompt], [suffix])[0], rows=(i,))
        return replace(request, path="/infill", body=infill_body(request.body)) if self.infill else request

    def _measure(self, outcomes: Sequence[Outcome]) -> None:
        """Rows that failed because side by side they overflowed the server's context: the
        others are how many fit (``Slots.measured``)."""
        failed = [o for o in outcomes if isinstance(o, BackendError) and _overflowed(o)]
        if failed:
            self.upstream.slots.noted_failure("context size")
            self.upstream.slots.measured(len(outcomes) - len(failed))

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
            self.upstream.slots.notice(data)
            if path == "/infill":
                return (data if self.native else infill_answer(data)), [data["content"]]
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
        fmt = INFILL_STREAM if self.infill or self.native else STREAM_FORMATS[self.api.name]
        requests = [self._one_row(p, t, i) for i, (p, t) in enumerate(zip(prompts, tails, strict=True))]
        self.streams = [Row(BoundaryStopper(p, self.stop), self.max_chars) for p in prompts]

        declined: list[BackendError] = []

        def deciding(outcomes: list[Outcome]) -> int | None:
            failed = [o for o in outcomes if isinstance(o, BackendError) and _overflowed(o)]
            if failed:  # rows side by side overflowed the server's context: nothing is decided
                declined.append(failed[0])
                return None
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
        self._measure(got.outcomes)
        if declined:  # the repair fails; the plugin gets the plain row (``Proxy._unrepaired``)
            raise declined[0]
        # a row that had ended here when the decision closed it (``draining``) was whole, not cut
        return Decided(got.outcomes, got.chosen, tuple(i for i in got.cut if i not in self.draining))

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
            infill = fmt is INFILL_STREAM
            try:  # (as a row asked whole is read: ``_texts``)
                data = model_json(json.loads(await resp.content.read(MAX_RESPONSE_BYTES)))
                text = data["content"] if infill else self.api.texts(data, 1)[0]
            except (ValueError, KeyError, IndexError, TypeError, AttributeError, RecursionError) as exc:
                raise BackendResponseError(f"{self.upstream.shown} answered without a completion.") from exc
            self.answers[i] = infill_answer(data) if infill and not self.native else data
            row.whole = True
            row.add(text, "stop", after)
            return
        draining: str | None = None  # how the row ended here, while its last event is awaited
        async for event in events(resp, fmt.framing, MAX_RESPONSE_BYTES):
            data = model_json(event)  # its ids and model build the plugin's answer: made safe here
            try:
                piece, finish = fmt.piece(data)
            except (KeyError, IndexError, TypeError, AttributeError) as exc:
                raise BackendResponseError(
                    f"{self.upstream.shown} sent a stream event without a completion."
                ) from exc
            self.streamed_pieces += 1
            self.upstream.slots.notice(data)
            if fmt is INFILL_STREAM:
                # each event carries the token counts so far: a row closed before its last event
                # (at the decision, or ended here) still has them; the last event has every field
                if data.get("stop"):
                    seen = dict(data)
                else:
                    seen = self.infill_events.get(i, {})
                    seen = {**seen, **{k: v for k, v in data.items() if k not in PARTIAL_ONLY}}
                self.infill_events[i] = seen
                self.answers[i] = seen if self.native else infill_answer(seen)
            else:
                self.answers[i] = self.api.merge_event(self.answers.get(i), data)
            if draining is not None:
                if data.get("stop"):
                    row.ended = draining
                    return
                continue
            ended = row.add(piece, finish, after)
            if i == self.chosen:
                self.progress.set()
            if ended:
                if self.native and row.ended_here and not data.get("stop"):
                    # a plugin's own /infill request is answered with the server's fields (its
                    # timings, tokens_cached, truncated...), which only the last event carries:
                    # the row runs on at the server, its text as it ended here, until that event
                    # or until the decision cuts it (a row so is still running)
                    draining, row.ended = row.ended, None
                    self.draining.add(i)
                    continue
                return
        if draining is not None:  # the server ended the stream without its last event
            row.ended = draining
            return
        raise interrupted(self.upstream.shown)

    def shape_source(self) -> Any:
        """The upstream answer the plugin's answer is built on (ids, model name, usage): the
        original row's, else the chosen row's, else any row's; a streamed row's is what its
        events said (``Api.merge_event``; an ``/infill`` row's events, ``infill_events``)."""
        chosen = self.answers.get(self.chosen) if self.chosen else None
        source = self.answers.get(0)
        if source is None:  # the original row was closed before any answer came
            return chosen if chosen is not None else next((a for a in self.answers.values() if a), None)
        unended = self.native and isinstance(source, dict) and not source.get("stop")
        if unended and isinstance(chosen, dict) and chosen.get("stop"):
            # the original row was closed before its last event, which alone has the server's
            # fields: the chosen row's, whose completion the plugin gets
            return chosen
        if (
            isinstance(source, dict)
            and "usage" not in source
            and isinstance(chosen, dict)
            and "usage" in chosen
        ):
            # the original row's stream was closed at the decision, before its usage came: the
            # chosen row's, whose completion the plugin gets
            source = {**source, "usage": chosen["usage"]}
        return source


# an /infill event's fields that describe that event alone (its piece of the text), not the row
PARTIAL_ONLY = frozenset({"content", "tokens", "completion_probabilities", "prompt_progress"})


def infill_body(body: dict[str, Any]) -> dict[str, Any]:
    """An OpenAI completion row's body as a request to llama.cpp's ``/infill``: the prompt and
    suffix as ``input_prefix`` and ``input_suffix``, ``max_tokens`` as ``n_predict``; the sampling
    options as they are (the server takes the same names)."""
    out = {k: v for k, v in body.items() if k not in ("prompt", "suffix", "max_tokens", "n", "best_of")}
    out["input_prefix"] = body.get("prompt", "")
    out["input_suffix"] = body.get("suffix", "")
    if "max_tokens" in body:
        out["n_predict"] = body["max_tokens"]
    return out


def infill_answer(data: Any) -> dict[str, Any]:
    """What an OpenAI answer is built on, from llama.cpp's ``/infill`` answer (or its last
    event): its model, its usage (``tokens_evaluated``, ``tokens_predicted``), its finish reason.

    >>> infill_answer({"content": "x", "model": "m", "tokens_evaluated": 9, "tokens_predicted": 2,
    ...                "stop_type": "limit"})["usage"]
    {'prompt_tokens': 9, 'completion_tokens': 2, 'total_tokens': 11}
    """
    if not isinstance(data, dict):
        return {}
    out: dict[str, Any] = {
        "choices": [{"finish_reason": "length" if data.get("stop_type") == "limit" else "stop"}]
    }
    if isinstance(data.get("model"), str):
        out["model"] = data["model"]
    evaluated, predicted = data.get("tokens_evaluated"), data.get("tokens_predicted")
    if isinstance(evaluated, int) and isinstance(predicted, int):
        out["usage"] = {"prompt_tokens": evaluated, "completion_tokens": predicted,
                        "total_tokens": evaluated + predicted}  # fmt: skip
    return out


def _overflowed(error: BackendError) -> bool:
    """Whether a row failed for the server's context (its error body says, for an error status)."""
    if isinstance(error, UpstreamRefused):
        return overflowed(error.body[:4096].decode("utf-8", "replace"))
    return overflowed(str(error))


__all__ = [
    "HOP_BY_HOP",
    "MAX_STREAMS",
    "Rows",
    "Upstream",
    "UpstreamRefused",
    "contained",
    "forwarded_headers",
]
