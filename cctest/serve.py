"""An OpenAI-compatible completion server over a local model (``cctest serve``).

It lets several editors share one loaded model, and it is the real server the HTTP backend is
tested against. Endpoints:

* ``POST /v1/completions``: ``prompt`` (a string or a list of strings), ``max_tokens`` (16 by
  default, as OpenAI), ``temperature``, ``top_p``, ``stop`` (a string or a list), ``model``
  (accepted, not checked), ``n`` (1 only), ``stream``; answers OpenAI's ``text_completion``
  object with one choice per prompt and token usage, or with ``stream: true`` OpenAI's
  server-sent events (below);
* ``POST /v1/chat/completions``: ``messages`` (``{"role": "system" | "user" | "assistant",
  "content": "..."}``, at least one) and the same options (``max_tokens`` 512 by default); the
  conversation becomes text through the model tokenizer's chat template, or, for a model without
  one, the plain template of ``cctest.backends.base.plain_chat_template`` (``### User:`` sections
  and an open ``### Assistant:`` one; the answer ends where the model starts another section);
  answers OpenAI's ``chat.completion`` object;
* ``GET /v1/models``: the one model served; ``GET /health``: ``{"status": "ok"}``.

Streaming (``stream: true``, both POST endpoints) answers ``text/event-stream``: one ``data:
{...}`` event per row and decoding step (``choices[0].index`` the row, the prompt's place in
``prompt``; ``text``, or for chat ``delta.content``, empty for a step that shows nothing new: a
token regenerating the prompt's healed tail, text held back; so a client counting a row's tokens
by its events, as the early decision does, counts every token), the row's last event
with its ``finish_reason`` as soon as that row ends (not when its batch does), then ``data:
[DONE]``; with ``stream_options.include_usage`` a last event with ``usage`` and no choices. Text
that may be the start of a stop sequence, or half a UTF-8 character, is held back until it is
known, so the events of a row add up to the text a plain request gets. A streamed request's rows
are batched like any other (together, and with other requests). A client that disconnects
stops its rows at the end of the model's current decoding step (``_Live.cancelled``, set as the
connection is lost, read by the model's thread after every token, through
``HFBackend.generate_safe``'s ``on_step``): they write no more tokens and
leave the batch, the rows still running going on without them (each later step costs what they
cost; ``BatchStats.steps`` counts the steps by their rows), a batch whose every row has stopped
ends, and its prompts not yet sent to the model are never sent.

Concurrent requests share ``generate`` calls: a collector takes the first waiting request, waits a
few milliseconds for more, again after each that comes (a burst is collected until it pauses, at
most ``BURST_WAITS`` times as long; and whatever queued while the model was busy), and runs ONE batched
``generate`` of at most ``max_batch`` prompts in a worker thread, so the event loop keeps
accepting requests. The batch is shared fairly: the requests waiting with the same generation
options each get a turn, one prompt at a time, until it is full or no request can add more
than the second-largest one has left; a request with more prompts than that continues in the
next batches, beside whatever arrived meanwhile. So one client's large request does not hold
up another's small one: the small one waits for the batch in progress, then shares a small
batch with a few of the large one's prompts. A request may carry at most
``max_prompts`` prompts. The server completes like an OpenAI endpoint: it stops at EOS, a
``stop`` sequence or ``max_tokens``, not at cctest's code boundaries (clients trim).

Every error is JSON in OpenAI's shape, ``{"error": {"message", "type", "param", "code"}}``: a bad
request (not JSON, nested too deeply, a wrong field, too many prompts) a 400, an unknown path a
404, a wrong method a 405, a body over the size limit a 413, a failing model a 500 (503 when out
of memory). Errors a client causes are logged in one line, without a traceback; the server keeps
running either way. So are requests aiohttp's HTTP parser refuses (a bad header, a header line
over 8 KiB, a negative ``Content-Length``, bytes that are not HTTP such as a TLS ClientHello):
a 400 in the same shape, then the connection is closed.

Slow and greedy clients are bounded (``Limits``): a request's headers must arrive within
``request_timeout`` seconds of the connection opening (or of the previous answer on a kept-alive
connection, so an idle connection is closed after as long), and its body within as long again,
else the connection is closed (a 408 when the headers had come); a ``Content-Length`` over the
body limit is a 413 at once, before any of the body is read. At most ``max_connections``
connections are open at a time, by default the open-file limit less a reserve, so the server can
always accept and answer; at most ``max_per_address`` from one client address. A connection past
either cap gets a 503 (429 for the per-address cap) and is closed. Refused connections, and
accepts that fail (EMFILE and the like), are logged in one line per ``LOG_EVERY`` seconds with
how many there were, never a traceback each.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import json
import logging
import reprlib
import signal
import sys
import time
import uuid
from collections import Counter, deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from .admission import (
    LOG_EVERY,
    REQUEST_TIMEOUT,
    Limits,
    LoopErrors,
    Site,
    headroom_warning,
    read_body,
    url,
)
from .admission import Connection as _Connection
from .backends.base import PLAIN_CHAT_STOP, GenerationOptions, Message
from .backends.hf import Generation, HFBackend, OnStep
from .config import SPECS
from .errors import BackendError, BackendOutOfMemory, ConfigError
from .strings import common_prefix_length

log = logging.getLogger(__name__)


MAX_PROMPTS = 256  # per request
MAX_BODY_BYTES = 8 * 1024 * 1024


class BadRequest(ValueError):
    """A request the server cannot serve; its message goes back to the client (``param``: the
    field at fault, if one is)."""

    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.param = param


class _Live:
    """A request's rows while they are written: each row's text so far and how it ended
    (``finish_reason``, None while it runs), set on the event loop from the model's thread after
    every decoding step when the request is ``streamed``. ``cancelled`` (the client went away,
    streamed or not) is read by the model's thread after every token: the request's rows then
    stop. ``steps``: each row's (text, finish) after every step not yet sent, so a stream that
    fell behind the model still sends one event per step (a client counting tokens by events, as
    an early decision does, counts them all)."""

    def __init__(self, rows: int, *, streamed: bool = True) -> None:
        self.streamed = streamed
        self.texts = [""] * rows
        self.ended: list[str | None] = [None] * rows
        self.steps: list[list[tuple[str, str | None]]] = [[] for _ in range(rows)]
        self.cancelled = False
        self.changed = asyncio.Event()

    def update(self, row: int, text: str, ended: str | None) -> None:
        if self.ended[row] is None:
            self.texts[row], self.ended[row] = text, ended
            self.steps[row].append((text, ended))
            self.changed.set()

    def cancel(self) -> None:
        """The client went away: the rows stop after the model's current step."""
        self.cancelled = True
        self.changed.set()

    def take(self, row: int) -> list[tuple[str, str | None]]:
        """Row ``row``'s steps not yet sent, oldest first."""
        steps, self.steps[row] = self.steps[row], []
        return steps


@dataclass
class _Item:
    """One request's prompts; ``sent`` of them have gone to ``generate`` so far; ``live``: the
    request is streamed."""

    prompts: list[str]
    options: GenerationOptions
    future: asyncio.Future[list[Generation | BackendError]]
    sent: int = 0
    results: list[Generation | BackendError] = field(default_factory=list)
    live: _Live | None = None

    @property
    def gone(self) -> bool:
        """Nobody waits for it any more: answered, failed, or its client went away."""
        return self.future.done() or (self.live is not None and self.live.cancelled)


@dataclass
class BatchStats:
    batches: int = 0  # generate calls
    rows: int = 0  # prompts completed
    largest: int = 0  # most prompts in one generate call
    sizes: list[int] = field(default_factory=list)
    tokens: int = 0  # new tokens the model wrote, a stopped row's up to where it stopped
    cancelled: int = 0  # rows stopped because their request's client went away
    # decoding steps of every batch, by how many rows each generated (rows stopped leave the batch)
    steps: Counter[int] = field(default_factory=Counter)


BURST_WAITS = 10  # a burst of requests is collected for at most this many times ``wait_ms``


class Batcher:
    """Collects concurrent requests into shared batched ``generate`` calls."""

    def __init__(self, backend: HFBackend, *, max_batch: int = 32, wait_ms: float = 5.0) -> None:
        self.backend = backend.with_options(boundaries=False)  # an OpenAI server does not trim code
        self.max_batch = max(1, max_batch)
        self.wait = max(0.0, wait_ms) / 1000
        self.stats = BatchStats()
        self._queue: asyncio.Queue[_Item] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self._running = 0  # generate calls under way

    @property
    def idle(self) -> bool:
        """No ``generate`` under way and no request waiting (its ``stats`` are then complete: a
        streamed row is answered before its batch ends)."""
        return self._running == 0 and self._queue.empty()

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run(), name="cctest-batcher")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
            self._task = None

    async def submit(
        self, prompts: Sequence[str], options: GenerationOptions, live: _Live | None = None
    ) -> list[Generation | BackendError]:
        """Every prompt's generation, once all are done; ``live``: a streamed request, whose rows
        report their text after every step and stop once ``live.cancelled``."""
        future: asyncio.Future[list[Generation | BackendError]] = asyncio.get_running_loop().create_future()
        await self._queue.put(_Item(list(prompts), options, future, live=live))
        return await future

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        active: deque[_Item] = deque()  # requests with prompts left, the next to be served first
        while True:
            if not active:
                active.append(await self._queue.get())
                # a few ms for company, from the latest arrival: a burst of requests (a repair's
                # rows, each a streamed request of its own) is collected until it pauses, up to
                # BURST_WAITS times as long. A row that came a few ms late used to wait for the
                # whole batch before it, and the client's early decision, which needs every row's
                # first tokens, with it: the batch's rows were all written to their ends
                start = loop.time()
                deadline = start + self.wait
                while sum(len(i.prompts) for i in active) < self.max_batch:
                    left = deadline - loop.time()
                    if left <= 0:
                        break
                    try:
                        active.append(await asyncio.wait_for(self._queue.get(), left))
                    except asyncio.TimeoutError:
                        break
                    deadline = min(start + BURST_WAITS * self.wait, loop.time() + self.wait)
            while not self._queue.empty():  # whatever queued while the model was busy
                active.append(self._queue.get_nowait())
            active = deque(i for i in active if not i.gone)  # a client that went away
            if not active:
                continue
            options = active[0].options
            group = [i for i in active if i.options == options]
            await self._generate(options, self._share(group))
            # the requests just served go behind the others: other options get the next turn
            active = deque([i for i in active if i.options != options] + group)

    def _share(self, group: list[_Item]) -> list[tuple[_Item, int]]:
        """How many of each request's remaining prompts go into this batch: all of them if they
        fit; else one from each in turn until the batch is full, and none takes more than the
        second-largest request has left. Alone, a request fills the batch; beside a small one,
        a large one adds only as many prompts as the small one, so the small one's batch is
        small and answered soon."""
        left = [len(item.prompts) - item.sent for item in group]
        if len(group) == 1 or sum(left) <= self.max_batch:
            cap = self.max_batch  # all of it fits (or there is no one to share with)
        else:
            cap = max(1, sorted(left)[-2])
        take = [0] * len(group)
        rows = 0
        while rows < self.max_batch:
            before = rows
            for n in range(len(group)):
                if rows < self.max_batch and take[n] < min(left[n], cap):
                    take[n] += 1
                    rows += 1
            if rows == before:
                break
        return [(item, n) for item, n in zip(group, take, strict=True) if n]

    def _watch(self, parts: list[tuple[_Item, int]]) -> tuple[OnStep | None, list[int | None], list[int]]:
        """What the model's thread calls after every decoding step when a request served over
        HTTP has rows in this batch (each has a ``_Live``; None: none has); per row, once it was
        stopped because its client went away, the tokens it had written (None: not stopped); and
        how many rows each step generated."""
        rows = [(item, item.sent + j) for item, n in parts for j in range(n)]
        stopped: list[int | None] = [None] * len(rows)
        ran: list[int] = []
        if not any(item.live is not None for item, _ in parts):
            return None, stopped, ran
        loop = asyncio.get_running_loop()
        running = [True] * len(rows)
        written = [0] * len(rows)

        def watch(first: int, texts: Sequence[str], ended: Sequence[str | None], batch: int) -> list[bool]:
            ran.append(batch)
            stop = []
            for k in range(len(texts)):
                j = first + k
                item, row = rows[j]
                live = item.live
                cancelled = live is not None and live.cancelled
                if running[j]:  # it wrote this step's token
                    written[j] += 1
                    running[j] = ended[k] is None and not cancelled
                    if cancelled and ended[k] is None:
                        stopped[j] = written[j]
                    elif live is not None and live.streamed and not cancelled:
                        loop.call_soon_threadsafe(live.update, row, texts[k], ended[k])
                stop.append(cancelled)
            return stop

        return watch, stopped, ran

    async def _generate(self, options: GenerationOptions, parts: list[tuple[_Item, int]]) -> None:
        lead = lead_request([item.prompts[item.sent : item.sent + n] for item, n in parts])
        parts = [parts[lead], *parts[:lead], *parts[lead + 1 :]]
        prompts = [p for item, n in parts for p in item.prompts[item.sent : item.sent + n]]
        watch, stopped, ran = self._watch(parts)
        self._running += 1
        try:
            results = await asyncio.to_thread(self.backend.generate_safe, prompts, options, on_step=watch)
        except Exception as exc:  # a bug or a broken model: fail these requests, keep serving
            log.exception("generate failed on a batch of %d prompts", len(prompts))
            for item, _ in parts:
                if not item.future.done():
                    item.future.set_exception(exc)
            return
        finally:
            self._running -= 1  # the stats below are counted before anything else runs
        self.stats.batches += 1
        self.stats.rows += len(prompts)
        self.stats.largest = max(self.stats.largest, len(prompts))
        self.stats.sizes.append(len(prompts))
        self.stats.steps.update(ran)
        for r, cut in zip(results, stopped, strict=True):
            if cut is not None:
                self.stats.cancelled += 1
                self.stats.tokens += cut
            elif isinstance(r, Generation):
                self.stats.tokens += r.completion_tokens
        start = 0
        for item, n in parts:
            item.results.extend(results[start : start + n])
            start += n
            item.sent += n
            if item.sent == len(item.prompts) and not item.future.done():
                item.future.set_result(item.results)


COMPARE_CHARS = 1 << 18  # leading characters compared at most (a longer prompt is cut to the context)


def common_chars(a: str, b: str, limit: int = COMPARE_CHARS) -> int:
    """How many leading characters ``a`` and ``b`` have in common, counted up to ``limit``
    (``cctest.strings.common_prefix_length``)."""
    return common_prefix_length(a, b, limit)


def lead_request(requests: Sequence[Sequence[str]]) -> int:
    """Which of a batch's requests (each its prompts in this batch, in batch order) should lead
    it: the one whose first prompt has the most leading text in common with the batch's other
    prompts (the first such). The HF backend lays a batch out around its first row: each row
    shares the first row's key/value cache as far as it has tokens in common with it and
    prefills only the rest (``_layout.row_shares``). A repair's rows come to ``cctest serve`` as
    requests of their own, in whatever order they arrive; with a mutant changed near the top of
    the window first, the rows shared little with it and the batch prefilled up to 2.5 times as
    many tokens as with the prompt first (pprint.py:630 through ``cctest proxy``: 2,292 token
    positions against 1,688).

    The prompts are sorted, so that what two of them have in common is the least of what the
    neighbours between them have: n - 1 comparisons, not n², each at most ``COMPARE_CHARS``.

    >>> lead_request([["import sys; x"], ["import os; y"], ["import os; x"]])
    1
    """
    if len(requests) < 3:
        return 0  # with two rows either shares as much with the other
    texts = [p for prompts in requests for p in prompts]
    order = sorted(range(len(texts)), key=texts.__getitem__)
    near = [common_chars(texts[i], texts[j]) for i, j in itertools.pairwise(order)]
    place = {row: k for k, row in enumerate(order)}

    def score(row: int) -> int:
        k, total = place[row], 0
        for side in (near[:k][::-1], near[k:]):  # towards either end of the order
            least = COMPARE_CHARS
            for common in side:
                least = min(least, common)
                total += least
        return total

    firsts = list(itertools.accumulate((len(prompts) for prompts in requests), initial=0))[:-1]
    scores = [score(i) for i in firsts]  # each request's first prompt's
    return max(range(len(requests)), key=scores.__getitem__)


BATCHER_KEY = web.AppKey("batcher", Batcher)
CHAT_BATCHER_KEY = web.AppKey("chat_batcher", Batcher)
MODEL_KEY = web.AppKey("model_id", str)
MAX_PROMPTS_KEY = web.AppKey("max_prompts", int)
MAX_BODY_KEY = web.AppKey("max_body_bytes", int)
REQUEST_TIMEOUT_KEY = web.AppKey("request_timeout", float)


def _sampling(body: dict[str, Any], name: str, default: float) -> float:
    """A sampling parameter of a request, checked by the setting's one description."""
    value = body.get(name)
    try:
        return float(SPECS[name].validate(default if value is None else value))
    except ConfigError:
        # the client's value is echoed in the answer and the log: at most a short prefix of it
        raise BadRequest(f"'{name}' must be {SPECS[name].what()}, not {reprlib.repr(value)}.", name) from None


def _unicode(text: str, param: str) -> str:
    """``text`` if it is Unicode text; JSON's ``\\ud800`` escapes give Python strings holding
    lone surrogates, which no tokenizer encodes: a 400 that says where."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise BadRequest(
            f"'{param}' holds a lone surrogate (\\u{ord(text[exc.start]):04x} at character "
            f"{exc.start}), which is not Unicode text; send each surrogate pair whole.",
            param,
        ) from None
    return text


def parse_request(body: Any, max_prompts: int = MAX_PROMPTS) -> tuple[list[str], GenerationOptions]:
    """Prompts and options of a /v1/completions body, or BadRequest saying what is wrong."""
    if not isinstance(body, dict):
        raise BadRequest("the request body must be a JSON object.")
    prompt = body.get("prompt")
    if isinstance(prompt, str):
        prompts = [prompt]
    elif isinstance(prompt, list) and prompt and all(isinstance(p, str) for p in prompt):
        prompts = list(prompt)
    else:
        raise BadRequest("'prompt' must be a string or a non-empty list of strings.", "prompt")
    for text in prompts:
        _unicode(text, "prompt")
    if len(prompts) > max_prompts:
        raise BadRequest(
            f"a request may carry at most {max_prompts} prompts and this one has {len(prompts)}; "
            "split it into several requests.",
            "prompt",
        )
    max_tokens = body.get("max_tokens", 16)
    if max_tokens is None:
        max_tokens = 16
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
        raise BadRequest("'max_tokens' must be a positive integer.", "max_tokens")
    # the ranges are the settings' own (cctest.config), the CLI's and the language server's too
    temperature = _sampling(body, "temperature", 1.0)  # OpenAI's default; cctest's client sends its own
    top_p = _sampling(body, "top_p", 1.0)
    stop = body.get("stop")
    if stop is None:
        stops: tuple[str, ...] = ()
    elif isinstance(stop, str):
        stops = (stop,)
    elif isinstance(stop, list) and all(isinstance(s, str) for s in stop):
        stops = tuple(stop)
    else:
        raise BadRequest("'stop' must be a string or a list of strings.", "stop")
    for text in stops:
        _unicode(text, "stop")
    if body.get("n", 1) not in (1, None):
        raise BadRequest("only n = 1 is supported.", "n")
    if body.get("stream") not in (True, False, None):
        raise BadRequest("'stream' must be true or false.", "stream")
    if not isinstance(body.get("stream_options") or {}, dict):
        raise BadRequest("'stream_options' must be an object.", "stream_options")
    if body.get("echo"):
        raise BadRequest("echo is not supported.", "echo")
    options = GenerationOptions(
        max_new_tokens=max_tokens, temperature=float(temperature), top_p=float(top_p), stop=stops
    )
    return prompts, options


def _error(
    status: int, message: str, kind: str, *, param: str | None = None, code: str | None = None
) -> web.Response:
    """An error in OpenAI's shape."""
    return web.json_response(
        {"error": {"message": message, "type": kind, "param": param, "code": code}}, status=status
    )


def _shape(status: int, message: str, kind: str, code: str) -> web.Response:
    """``_error`` as ``cctest.admission`` asks for it (connections refused, malformed HTTP)."""
    return _error(status, message, kind, code=code)


def _http_error(request: web.Request, exc: web.HTTPException) -> web.Response:
    """aiohttp's own HTTP errors (routing, body size) in OpenAI's shape."""
    if isinstance(exc, web.HTTPNotFound):
        message = (
            f"there is no {request.path[:200]}; cctest serve answers POST /v1/completions, "
            "POST /v1/chat/completions, GET /v1/models and GET /health."
        )
        return _error(404, message, "invalid_request_error", code="not_found")
    if isinstance(exc, web.HTTPMethodNotAllowed):
        allowed = ", ".join(sorted(exc.allowed_methods))
        message = f"{request.method[:20]} is not allowed on {request.path[:200]}; use {allowed}."
        return _error(405, message, "invalid_request_error", code="method_not_allowed")
    if isinstance(exc, web.HTTPRequestEntityTooLarge):
        message = f"the request body is larger than the server's limit of {request.app[MAX_BODY_KEY]} bytes."
        return _error(413, message, "invalid_request_error", code="request_too_large")
    kind = "server_error" if exc.status >= 500 else "invalid_request_error"
    return _error(exc.status, f"{exc.reason}.", kind, code=exc.reason.lower().replace(" ", "_"))


@web.middleware
async def openai_errors(
    request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
) -> web.StreamResponse:
    """Every error as JSON in OpenAI's shape; a client's mistakes are logged in one line, a bug
    in the server with its traceback, and the server keeps serving."""
    try:
        return await handler(request)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise  # redirects and the like are not errors
        log.info("%s %s: %d %s", request.method, request.path[:200], exc.status, exc.reason)
        return _http_error(request, exc)
    except Exception:
        log.exception("%s %s failed", request.method, request.path[:200])
        return _error(
            500, "the server failed on this request; see its log.", "server_error", code="server_error"
        )


CHAT_ROLES = ("system", "user", "assistant")
CHAT_MAX_TOKENS = 512  # a chat answer's default budget: a function in a fenced block, with words


def parse_chat_request(body: Any) -> tuple[list[Message], GenerationOptions]:
    """Messages and options of a /v1/chat/completions body, or BadRequest saying what is wrong.
    The options are checked as /v1/completions checks them."""
    if not isinstance(body, dict):
        raise BadRequest("the request body must be a JSON object.")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise BadRequest("'messages' must be a non-empty list of {role, content} objects.", "messages")
    for m in messages:
        if (
            not isinstance(m, dict)
            or m.get("role") not in CHAT_ROLES
            or not isinstance(m.get("content"), str)
        ):
            raise BadRequest(
                "each message must be an object with a 'role' (system, user or assistant) and a "
                "string 'content'.",
                "messages",
            )
        _unicode(m["content"], "messages")
    rest = {k: v for k, v in body.items() if k != "messages"}
    rest.setdefault("max_tokens", CHAT_MAX_TOKENS)
    _, options = parse_request({**rest, "prompt": ""})
    return [{"role": m["role"], "content": m["content"]} for m in messages], options


async def _json_body(request: web.Request) -> Any:
    """The request's JSON body, or the response that says why there is none: a 413 or a 408 as
    ``cctest.admission.read_body`` answers them, a 400 for a body that is not JSON."""
    raw = await read_body(
        request, request.app[MAX_BODY_KEY], request.app[REQUEST_TIMEOUT_KEY], _shape, "server"
    )
    if isinstance(raw, web.StreamResponse):
        return raw
    try:
        return json.loads(raw)
    except RecursionError:
        return _error(
            400, "the request body is nested too deeply.", "invalid_request_error", code="invalid_json"
        )
    except ValueError:  # UnicodeDecodeError included
        return _error(400, "the request body is not JSON.", "invalid_request_error", code="invalid_json")


async def _generations(
    request: web.Request, batcher: Batcher, prompts: list[str], options: GenerationOptions
) -> list[Generation] | web.Response:
    """The generations for ``prompts`` through ``batcher``, or the error response. A client that
    disconnects stops its rows as a streamed one does (``_Live.cancelled``, set as the connection
    is lost): nobody would read the answer."""
    live = _Live(len(prompts), streamed=False)
    connection = request.protocol if isinstance(request.protocol, _Connection) else None
    if connection is not None:
        connection.on_lost.append(live.cancel)
    task = asyncio.ensure_future(batcher.submit(prompts, options, live))
    lost = asyncio.ensure_future(live.changed.wait())  # set by the connection's loss alone
    try:
        await asyncio.wait([task, lost], return_when=asyncio.FIRST_COMPLETED)
    finally:
        lost.cancel()
        if connection is not None and live.cancel in connection.on_lost:
            connection.on_lost.remove(live.cancel)
        gone = not task.done()
        if gone:
            live.cancelled = True  # the model's thread stops these rows after its next step
            task.cancel()
    if gone:
        log.info("POST %s: the client closed the connection; its rows stop", request.path)
        return web.Response(status=499)  # nobody reads it
    return _checked(task)


def _within_context(batcher: Batcher, options: GenerationOptions) -> None:
    """BadRequest when ``max_tokens`` is more than the model's context (where it declares one):
    a row writes at most half of it, the prompt keeping the rest."""
    context = batcher.backend.context
    if context and options.max_new_tokens > context:
        raise BadRequest(
            f"'max_tokens' is {options.max_new_tokens}, more than this model's context of {context} tokens.",
            "max_tokens",
        )


def _checked(task: asyncio.Future[list[Generation | BackendError]]) -> list[Generation] | web.Response:
    """A finished submission's generations, or the error response."""
    try:
        results = task.result()
    except Exception:  # logged by the batcher
        return _error(
            500, "the model failed on this request; see the server log.", "server_error", code="server_error"
        )
    failed = [r for r in results if isinstance(r, BackendError)]
    if failed:
        status = 503 if isinstance(failed[0], BackendOutOfMemory) else 500
        return _error(status, str(failed[0]), "server_error", code="model_error")
    return [r for r in results if isinstance(r, Generation)]


def _usage(gens: Sequence[Generation]) -> dict[str, int]:
    prompt_tokens = sum(g.prompt_tokens for g in gens)
    completion_tokens = sum(g.completion_tokens for g in gens)
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }


def _held_back(text: str, stops: Sequence[str]) -> str:
    r"""What of a running row's ``text`` may be streamed: up to a stop sequence it holds (the row
    ends there), less an end that may be the start of one, or half a UTF-8 character (U+FFFD
    while its other bytes are not written).

    >>> _held_back("x = 1\n# E", ["# END"]), _held_back("a # END b", ["# END"]), _held_back("ab\ufffd", [])
    ('x = 1\n', 'a ', 'ab')
    """
    cut = min((i for i in (text.find(s) for s in stops if s) if i >= 0), default=-1)
    if cut >= 0:
        return text[:cut]
    keep = len(text)
    for s in stops:
        for n in range(min(len(s) - 1, len(text)), 0, -1):
            if text.endswith(s[:n]):
                keep = min(keep, len(text) - n)
                break
    return text[:keep].rstrip("\ufffd")


def _finished(text: str, stops: Sequence[str]) -> str:
    """An ended row's text, cut where a stop sequence starts (as ``generate`` trims it)."""
    cut = min((i for i in (text.find(s) for s in stops if s) if i >= 0), default=-1)
    return text[:cut] if cut >= 0 else text


def wants_stream(body: Any) -> tuple[bool, bool]:
    """Whether a (checked) request body asks for a stream, and for a last event with ``usage``."""
    if not isinstance(body, dict) or body.get("stream") is not True:
        return False, False
    return True, bool((body.get("stream_options") or {}).get("include_usage"))


class _Sse:
    """One streamed answer: OpenAI's server-sent events for ``/v1/completions`` (``chat`` False)
    or ``/v1/chat/completions``."""

    def __init__(self, request: web.Request, chat: bool) -> None:
        self.request, self.chat = request, chat
        self.id = f"{'chatcmpl' if chat else 'cmpl'}-{uuid.uuid4().hex}"
        self.object = "chat.completion.chunk" if chat else "text_completion"
        self.created = int(time.time())
        self.response: web.StreamResponse | None = None

    @property
    def gone(self) -> bool:
        """The client has closed the connection."""
        transport = self.request.transport
        return transport is None or transport.is_closing()

    async def open(self) -> None:
        response = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
        )
        await response.prepare(self.request)
        self.response = response

    async def event(self, data: dict[str, Any] | str) -> None:
        assert self.response is not None
        text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
        await self.response.write(f"data: {text}\n\n".encode())

    def chunk(self, index: int, text: str | None, finish: str | None) -> dict[str, Any]:
        """One choice's event; ``text`` None: a chat answer's first event (its role)."""
        choice: dict[str, Any] = {"index": index}
        if self.chat:
            delta: dict[str, str] = {"role": "assistant", "content": ""} if text is None else {}
            if text:
                delta["content"] = text
            choice.update(delta=delta, logprobs=None, finish_reason=finish)
        else:
            choice.update(text=text or "", logprobs=None, finish_reason=finish)
        return {
            "id": self.id,
            "object": self.object,
            "created": self.created,
            "model": self.request.app[MODEL_KEY],
            "choices": [choice],
        }


async def _stream(
    request: web.Request,
    batcher: Batcher,
    prompts: list[str],
    options: GenerationOptions,
    *,
    chat: bool,
    usage: bool,
) -> web.StreamResponse:
    """Answer ``prompts`` as server-sent events while their rows are written (module docstring).
    The response opens after the model's first step, so a model that fails at once is a JSON
    error as without a stream; a failure after that is an ``error`` event. A client that disconnects
    cancels its rows."""
    live = _Live(len(prompts))
    # a client that goes away stops its rows at once, not when this loop next wakes: the model's
    # thread, already in its next step, would otherwise write one more for every row
    connection = request.protocol if isinstance(request.protocol, _Connection) else None
    if connection is not None:
        connection.on_lost.append(live.cancel)
    task = asyncio.ensure_future(batcher.submit(prompts, options, live))
    sse = _Sse(request, chat)
    sent = [""] * len(prompts)
    done = [False] * len(prompts)
    stops = options.stop
    try:
        while True:
            over = task.done()
            if sse.gone:
                raise ConnectionResetError
            news = []
            for i in range(len(prompts)):
                for text, ended in live.take(i):  # one event per decoding step
                    if done[i] or (ended is None and over):
                        continue  # a row running when the batch is over: answered from the results below
                    shown = _finished(text, stops) if ended is not None else _held_back(text, stops)
                    if not shown.startswith(sent[i]):  # text taken back
                        if ended is not None:
                            continue  # answered from the results below
                        shown = sent[i]
                    # a step that shows nothing new (a token regenerating the prompt's healed
                    # tail, text held back) is an event without text: a client counting a row's
                    # tokens by its events counts every token
                    news.append((i, shown[len(sent[i]) :], ended))
                    sent[i] = shown
                    done[i] = ended is not None
            if news and sse.response is None:
                await sse.open()
                if chat:
                    await sse.event(sse.chunk(0, None, None))
            for i, delta, ended in news:
                await sse.event(sse.chunk(i, delta, ended))
            if over:
                break
            live.changed.clear()
            changed = asyncio.ensure_future(live.changed.wait())
            try:
                await asyncio.wait([task, changed], timeout=1.0, return_when=asyncio.FIRST_COMPLETED)
            finally:
                changed.cancel()
        gens = _checked(task)
        if isinstance(gens, web.Response):
            if sse.response is None:
                return gens
            await sse.event({"error": json.loads(gens.text or "{}").get("error")})
            await sse.event("[DONE]")
            return sse.response
        if sse.response is None:
            await sse.open()
            if chat:
                await sse.event(sse.chunk(0, None, None))
        for i, g in enumerate(gens):
            if not done[i]:
                rest = g.text[len(sent[i]) :] if g.text.startswith(sent[i]) else ""
                await sse.event(sse.chunk(i, rest, g.finish_reason))
        if usage:
            await sse.event(
                {
                    "id": sse.id,
                    "object": sse.object,
                    "created": sse.created,
                    "model": request.app[MODEL_KEY],
                    "choices": [],
                    "usage": _usage(gens),
                }
            )
        await sse.event("[DONE]")
        return sse.response if sse.response is not None else web.Response()
    except ConnectionError:
        log.info("POST %s: the client closed the stream; its rows stop", request.path)
        return sse.response or web.Response(status=499)  # nobody reads it
    finally:
        if connection is not None and live.cancel in connection.on_lost:
            connection.on_lost.remove(live.cancel)
        if not task.done():
            live.cancelled = True  # the model's thread stops these rows after its next step
            task.cancel()


async def completions(request: web.Request) -> web.StreamResponse:
    body = await _json_body(request)
    if isinstance(body, web.Response):
        return body
    try:
        prompts, options = parse_request(body, request.app[MAX_PROMPTS_KEY])
        _within_context(request.app[BATCHER_KEY], options)
    except BadRequest as exc:
        log.info("POST %s: 400 %s", request.path, exc)
        return _error(400, str(exc), "invalid_request_error", param=exc.param)
    stream, usage = wants_stream(body)
    if stream:
        return await _stream(request, request.app[BATCHER_KEY], prompts, options, chat=False, usage=usage)
    gens = await _generations(request, request.app[BATCHER_KEY], prompts, options)
    if isinstance(gens, web.Response):
        return gens
    return web.json_response(
        {
            "id": f"cmpl-{uuid.uuid4().hex}",
            "object": "text_completion",
            "created": int(time.time()),
            "model": request.app[MODEL_KEY],
            "choices": [
                {"index": i, "text": g.text, "finish_reason": g.finish_reason, "logprobs": None}
                for i, g in enumerate(gens)
            ],
            "usage": _usage(gens),
        }
    )


async def chat_completions(request: web.Request) -> web.StreamResponse:
    body = await _json_body(request)
    if isinstance(body, web.Response):
        return body
    try:
        messages, options = parse_chat_request(body)
        _within_context(request.app[CHAT_BATCHER_KEY], options)
    except BadRequest as exc:
        log.info("POST %s: 400 %s", request.path, exc)
        return _error(400, str(exc), "invalid_request_error", param=exc.param)
    batcher = request.app[CHAT_BATCHER_KEY]
    model = batcher.backend
    if model.chat_template is None:
        options = dataclasses.replace(options, stop=(*options.stop, PLAIN_CHAT_STOP))
    stream, usage = wants_stream(body)
    if stream:
        return await _stream(request, batcher, [model.chat_prompt(messages)], options, chat=True, usage=usage)
    gens = await _generations(request, batcher, [model.chat_prompt(messages)], options)
    if isinstance(gens, web.Response):
        return gens
    return web.json_response(
        {
            "id": f"chatcmpl-{uuid.uuid4().hex}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.app[MODEL_KEY],
            "choices": [
                {
                    "index": i,
                    "message": {"role": "assistant", "content": g.text},
                    "finish_reason": g.finish_reason,
                }
                for i, g in enumerate(gens)
            ],
            "usage": _usage(gens),
        }
    )


async def models(request: web.Request) -> web.Response:
    model_id = request.app[MODEL_KEY]
    return web.json_response(
        {"object": "list", "data": [{"id": model_id, "object": "model", "created": 0, "owned_by": "cctest"}]}
    )


async def health(request: web.Request) -> web.Response:
    return web.json_response({"status": "ok", "model": request.app[MODEL_KEY]})


def create_app(
    backend: HFBackend,
    *,
    max_batch: int = 32,
    wait_ms: float = 5.0,
    max_prompts: int = MAX_PROMPTS,
    max_body_bytes: int = MAX_BODY_BYTES,
    request_timeout: float = REQUEST_TIMEOUT,
) -> web.Application:
    """The aiohttp application serving ``backend`` (already loaded); ``request_timeout``: the
    seconds a request's body may take to arrive once its headers have."""
    app = web.Application(client_max_size=max_body_bytes, middlewares=[openai_errors])
    batcher = Batcher(backend, max_batch=max_batch, wait_ms=wait_ms)
    # chat prompts are generated from as they are: no token healing of the template's last tokens
    chat = Batcher(backend.with_options(token_healing=False), max_batch=max_batch, wait_ms=wait_ms)
    app[BATCHER_KEY] = batcher
    app[CHAT_BATCHER_KEY] = chat
    app[MODEL_KEY] = backend.path.name
    app[MAX_PROMPTS_KEY] = max(1, max_prompts)
    app[MAX_BODY_KEY] = max_body_bytes
    app[REQUEST_TIMEOUT_KEY] = float(request_timeout)

    async def lifecycle(app: web.Application) -> Any:
        loop = asyncio.get_running_loop()
        before = loop.get_exception_handler()
        loop.set_exception_handler(LoopErrors(before))
        batcher.start()
        chat.start()
        yield
        await batcher.stop()
        await chat.stop()
        loop.set_exception_handler(before)

    app.cleanup_ctx.append(lifecycle)
    app.router.add_post("/v1/completions", completions)
    app.router.add_post("/v1/chat/completions", chat_completions)
    app.router.add_get("/v1/models", models)
    app.router.add_get("/health", health)
    return app


async def start_server(
    backend: HFBackend,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    limits: Limits | None = None,
    **app_options: Any,
) -> tuple[web.AppRunner, str]:
    """Start serving in the running event loop; returns the runner (``await runner.cleanup()``
    stops it) and the base URL, with the real port when ``port`` is 0."""
    limits = limits or Limits()
    app = create_app(backend, request_timeout=limits.request_timeout, **app_options)
    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    await runner.setup()
    site = Site(runner, host, port, limits, _shape)
    await site.start()
    bound = runner.addresses[0]
    return runner, url(host, int(bound[1]))


def run(
    backend: HFBackend,
    host: str = "127.0.0.1",
    port: int = 8000,
    *,
    limits: Limits | None = None,
    **app_options: Any,
) -> None:
    """Serve until SIGINT or SIGTERM, then stop cleanly (the command's main loop)."""

    async def main() -> None:
        loop = asyncio.get_running_loop()
        loop.set_exception_handler(LoopErrors(None))  # until the end, the stopping included
        runner, url = await start_server(backend, host, port, limits=limits, **app_options)
        stop = asyncio.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                loop.add_signal_handler(sig, stop.set)
            except (NotImplementedError, RuntimeError):  # not on this platform / thread
                pass
        print(
            f"cctest serve: {backend.describe()} listening on {url}/v1/completions and /v1/chat/completions",
            flush=True,
        )
        warning = headroom_warning((limits or Limits()).max_connections)
        if warning is not None:
            print(f"cctest serve: {warning}", file=sys.stderr, flush=True)
        if host not in ("127.0.0.1", "localhost", "::1"):
            print(
                f"cctest serve: listening on {host}: anyone who can reach this machine can use the model.",
                file=sys.stderr,
                flush=True,
            )
        try:
            await stop.wait()
        finally:
            await runner.cleanup()
        print("cctest serve: stopped.", flush=True)

    asyncio.run(main())


__all__ = [
    "LOG_EVERY",
    "MAX_PROMPTS",
    "BadRequest",
    "Batcher",
    "Limits",
    "create_app",
    "parse_chat_request",
    "parse_request",
    "run",
    "start_server",
]
