"""Streamed completions for the http backend's early decision (``HTTPBackend.complete_deciding``).

Every row of a repair request is asked as a stream of its own, in the provider's stream format:

* ``openai``: the same endpoint with ``stream: true``; server-sent events ``data: {...}`` whose
  ``choices[0].text`` is the next piece and ``choices[0].finish_reason`` says when the row ended,
  then ``data: [DONE]`` (vLLM, llama.cpp's server, ``cctest serve``);
* ``ollama``: ``/api/generate`` with ``stream: true``; one JSON object per line, ``response``
  the next piece, the last with ``done: true`` (and ``done_reason``);
* ``tgi``: ``/generate_stream``; server-sent events ``data: {"token": {"text", "special"},
  "generated_text", "details"}``, ``generated_text`` set on the last one (a special token's text,
  EOS, is not part of the completion).

``Row.pump`` reads a row's pieces as they come: it counts them (one event is one token for all
three providers: what a server sends per decoding step, an event without text included: a step
may show nothing, e.g. a token regenerating the prompt's healed tail or text held back as the
possible start of a stop sequence; counting only events with text, a row whose first steps
showed nothing held the decision up for every row, which at a cursor after a run of spaces came
too late to save anything) and checks the row's text against its
natural end (``BoundaryStopper``) after each, so a row that reaches its end is closed there, as
the local backend stops a row. ``decide_over_streams`` waits until every row has written ``after``
pieces or ended, asks ``decide`` (the engine's detection and repair on those first pieces), closes
every other unfinished row's stream (closing the connection is what makes vLLM, Ollama, TGI and
``cctest serve`` stop generating it) and reads the chosen row on to its end.

A server whose events carry several tokens each (a proxy that buffers, a server that sends
what it has every few steps) would make a row count fewer pieces than tokens; so characters count
too, at ``CHARS_PER_TOKEN`` (16) to a token: a row has its first ``after`` tokens once it has
``after`` events or ``16 * after`` characters, whichever comes first. Sixteen is more than a code
model's token holds on average (about 3-4 characters of Python; a run of indentation may be one
token of up to 16 spaces), so with one event per token the events decide, and with larger events
the characters bound how long the decision waits.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from yarl import URL

from ..errors import BackendError, BackendResponseError
from ..safe_text import model_text
from ._stop import BoundaryStopper
from .base import Decide, Outcome

CHARS_PER_TOKEN = 16  # characters that count as one token at most (a server sending several per event)
MAX_EVENT_BYTES = 1024 * 1024  # one event (line) of a stream at most


class StreamRefused(BackendResponseError):
    """The server answered a streamed request with a refusal (a 4xx that is not about auth)."""


def interrupted(shown: str) -> BackendResponseError:
    """A stream that ended (``[DONE]``, or the connection closed cleanly) before its row had a
    finish reason: the server gave the row up (llama-cpp-python's server, by default, ends the
    row that is streaming whenever another request is queued), so it is a failed row, not a
    finished completion."""
    return BackendResponseError(f"{shown} ended a stream without a finish reason (the row was interrupted).")


# -- the providers' stream formats ----------------------------------------------------------------


def _openai_piece(data: Any) -> tuple[str, str | None]:
    choice = data["choices"][0]
    text = choice.get("text")
    if text is None:  # a chat chunk
        text = (choice.get("delta") or {}).get("content") or ""
    if not isinstance(text, str):
        raise TypeError("choices[0].text is not a string")
    return text, choice.get("finish_reason")


def _ollama_piece(data: Any) -> tuple[str, str | None]:
    text = data.get("response", "")
    if not isinstance(text, str):
        raise TypeError("response is not a string")
    return text, (data.get("done_reason") or "stop") if data.get("done") else None


def _tgi_piece(data: Any) -> tuple[str, str | None]:
    token = data["token"]
    text = "" if token.get("special") else token.get("text", "")
    if not isinstance(text, str):
        raise TypeError("token.text is not a string")
    if data.get("generated_text") is None:
        return text, None
    details = data.get("details") or {}
    return text, details.get("finish_reason") or "stop"


@dataclass(frozen=True)
class StreamFormat:
    framing: str  # "sse" (server-sent events) or "ndjson" (a JSON object per line)
    piece: Callable[[Any], tuple[str, str | None]]  # an event's text, and the finish reason
    path: tuple[str, str] | None = None  # the endpoint's path, and its streaming one

    def url(self, url: URL) -> URL:
        if self.path is None:
            return url
        plain, streamed = self.path
        path = url.path.rstrip("/")
        if path.endswith(plain):
            path = path[: -len(plain)]
        return url.with_path(path + streamed, keep_query=True)

    def body(self, body: dict[str, Any]) -> dict[str, Any]:
        return body if self.path is not None else {**body, "stream": True}


def _infill_piece(data: Any) -> tuple[str, str | None]:
    text = data.get("content", "")
    if not isinstance(text, str):
        raise TypeError("content is not a string")
    return text, (data.get("stop_type") or "stop") if data.get("stop") else None


# llama.cpp's server's /infill: events {"content", "stop"}, the last with "stop": true
INFILL_STREAM = StreamFormat("sse", _infill_piece)

STREAM_FORMATS = {
    "openai": StreamFormat("sse", _openai_piece),
    "ollama": StreamFormat("ndjson", _ollama_piece),
    "tgi": StreamFormat("sse", _tgi_piece, ("/generate", "/generate_stream")),
}


def without_stop(body: dict[str, Any]) -> dict[str, Any]:
    """A row's request body to stream, without its stop sequences (OpenAI's ``stop``, Ollama's
    ``options.stop``, TGI's ``parameters.stop``): the row is cut at them here, as it comes
    (``Row.add``). A server that holds back text that may begin a stop sequence never sends it
    when the row reaches its token limit there (llama.cpp's server: a streamed ``'#'`` where the
    same row asked whole is ``'#\\n'`` under the stop ``'\\n\\n'``), so the streamed and the whole
    rows would differ.

    >>> without_stop({"prompt": "x", "stop": ["\\n\\n"], "options": {"stop": ["a"], "seed": 1}})
    {'prompt': 'x', 'options': {'seed': 1}}
    """
    out = {k: v for k, v in body.items() if k != "stop"}
    for nested in ("options", "parameters"):
        if isinstance(out.get(nested), dict) and "stop" in out[nested]:
            out[nested] = {k: v for k, v in out[nested].items() if k != "stop"}
    return out


def is_stream(content_type: str, framing: str) -> bool:
    """Whether an answer's ``Content-Type`` is the stream asked for (else a whole answer)."""
    kind = content_type.split(";")[0].strip().lower()
    if framing == "sse":
        return kind == "text/event-stream"
    return kind in ("application/x-ndjson", "application/jsonl", "application/json-seq")


async def events(resp: aiohttp.ClientResponse, framing: str, limit: int) -> AsyncIterator[Any]:
    """The JSON of each event of a streamed answer (``[DONE]`` ends it), at most ``limit`` bytes
    in all; an event that is not JSON, or an ``error`` event, is a BackendResponseError."""
    buffer = b""
    total = 0
    async for chunk in resp.content.iter_any():
        total += len(chunk)
        if total > limit:
            raise BackendResponseError(f"the stream passed {limit // 1024} KiB; it was not read further.")
        buffer += chunk
        *lines, buffer = buffer.split(b"\n")
        if len(buffer) > MAX_EVENT_BYTES:
            raise BackendResponseError("the stream sent an event longer than 1 MiB.")
        for raw in lines:
            line = raw.strip()
            if framing == "sse":
                if not line.startswith(b"data:"):
                    continue  # blank separators, comments, event: and id: fields
                line = line[5:].strip()
                if line == b"[DONE]":
                    return
            if not line:
                continue
            try:
                data = json.loads(line)
            except (ValueError, RecursionError) as exc:
                raise BackendResponseError("the stream sent an event that is not JSON.") from exc
            if isinstance(data, dict) and "error" in data and len(data) <= 3:
                error = data["error"]
                message = error.get("message") if isinstance(error, dict) else error
                text = " ".join(model_text(str(message)).split())[:160]
                raise BackendResponseError(f"the server ended the stream with an error ({text}).")
            yield data


# -- reading rows and deciding -----------------------------------------------------------------


@dataclass
class Row:
    """One row's stream as it is read: its text so far, the tokens counted, how it ended."""

    stopper: BoundaryStopper
    max_chars: int
    text: str = ""
    pieces: int = 0
    ended: str | None = None  # "stop", "length", "boundary"; None while it runs
    error: BackendError | None = None
    whole: bool = False  # the server answered the whole completion at once (no stream)
    reached: asyncio.Event = field(default_factory=asyncio.Event)  # ``after`` tokens, or ended
    ended_here: bool = False  # ended by this side (its natural end, the length bound), not the server
    released: asyncio.Event = field(default_factory=asyncio.Event)  # its stream may close (``hold``)

    def outcome(self) -> Outcome:
        return self.error if self.error is not None else self.stopper.trim(self.text)

    def add(self, piece: str, finish: str | None, after: int) -> bool:
        """Take one event's text (one token, even without text: a server sends an event per
        decoding step, and a step may show nothing, e.g. a token that regenerates the prompt's
        healed tail); True once the row has ended."""
        self.text += model_text(piece)
        self.pieces += 1
        if self.stopper.stop_index(self.text) is not None:
            self.ended, self.ended_here = "boundary", True
        elif len(self.text) >= self.max_chars:
            self.text = self.text[: self.max_chars]
            self.ended, self.ended_here = "length", True
        elif finish:
            self.ended = str(finish)
        if self.ended is not None or self.pieces >= after or len(self.text) >= after * CHARS_PER_TOKEN:
            self.reached.set()
        return self.ended is not None

    def end(self, error: BackendError | None = None) -> None:
        if self.ended is None:
            self.ended = "stop" if error is None else "error"
        self.error = self.error or error
        self.reached.set()


async def hold(row: Row) -> None:
    """Keep a row's stream open, once the row has ended on this side, until the decision is made
    (``decide_over_streams`` releases every row then), so that the server is told of every row
    the decision no longer needs at once: ``cctest serve`` rebuilds its batch each time rows leave
    it, which costs several decoding steps of the whole batch (a row that reached its natural end
    at step 7 and two more at step 10 cost ~0.5 s each at tokenize.py:500 through the proxy,
    where a step costs ~0.1 s), while a row left running a few more steps costs a token each."""
    if row.ended_here:
        await row.released.wait()


# opens row i's stream and feeds it to the row (``Row.add``) until it ends or is cancelled, the
# stream held open (``hold``) while the row is held
Pump = Callable[[int, Row], Awaitable[None]]


@dataclass
class Streamed:
    """What ``decide_over_streams`` gives back."""

    outcomes: list[Outcome]
    chosen: int | None  # None: ``decide`` was not asked (every row ended first, or a refusal)
    cut: tuple[int, ...]  # rows closed unfinished
    whole: bool  # some server answered a row whole instead of streaming it
    refused: StreamRefused | None = None  # the server refused a stream: nothing was decided


async def decide_over_streams(
    rows: Sequence[Row],
    pump: Pump,
    after: int,
    decide: Decide,
    deadline: float,
    timeout: Callable[[], BackendError],
) -> Streamed:
    """Stream every row, decide once each has ``after`` tokens or has ended, close the others'
    streams and read the chosen row to its end. A row unfinished at ``deadline`` (the loop's
    clock) ends with ``timeout()``; a refused stream closes them all at once."""
    tasks = [asyncio.ensure_future(pump(i, row)) for i, row in enumerate(rows)]
    chosen: int | None = None
    cut: tuple[int, ...] = ()
    try:
        async with asyncio.timeout_at(deadline):
            await asyncio.gather(*(row.reached.wait() for row in rows))
            refused = next((r.error for r in rows if isinstance(r.error, StreamRefused)), None)
            if refused is not None:
                return Streamed([], None, (), False, refused)
            running = [i for i, row in enumerate(rows) if row.ended is None]
            if running:
                chosen = decide([r.outcome() for r in rows])
                cut = tuple(i for i in running if i != chosen)
                for i in cut:
                    tasks[i].cancel()  # the connection closes: the server stops writing the row
                for row in rows:  # and the rows that ended here, at the same time
                    row.released.set()
                if chosen is not None:
                    await tasks[chosen]
    except TimeoutError:
        for i, row in enumerate(rows):
            if row.ended is None and i not in cut:
                row.end(timeout())
    finally:
        for row in rows:
            row.released.set()
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return Streamed([r.outcome() for r in rows], chosen, cut, any(r.whole for r in rows))


__all__ = [
    "CHARS_PER_TOKEN",
    "INFILL_STREAM",
    "STREAM_FORMATS",
    "Row",
    "StreamFormat",
    "StreamRefused",
    "Streamed",
    "decide_over_streams",
    "events",
    "hold",
    "interrupted",
    "is_stream",
    "without_stop",
]
