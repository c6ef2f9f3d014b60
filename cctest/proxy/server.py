"""The proxy's aiohttp server: repaired completions in the upstream's own API, the rest passed through.

One handler takes every path and method. A completion request (``Api.read``) whose code reads as
Python is answered by ``mode``:

* ``repair``: the engine makes the prompt's mutants as the language server does, the upstream
  completes them all (``Rows``), and the plugin gets the repaired completion in its API's shape,
  streamed when it asked for a stream;
* ``monitor``: the request passes through at once (the plugin gets the upstream's own answer,
  streamed as it comes), a copy of the answer is kept, and afterwards the mutants are completed
  and the verdict recorded (at most ``MAX_BACKGROUND`` checks at once; more are skipped);
* ``off``: everything passes through.

Every other request (chat, embeddings, model lists, a prompt that is not Python, several prompts
in one request) passes through unchanged (``Upstream.forward``).

Suspected defects (and every verdict with ``log_all``) go to the defect log the language server
writes (``cctest.defects``), read with ``cctest defects``: the record's ``uri`` is
``proxy:UPSTREAM``, its ``model`` says ``proxy PROVIDER UPSTREAM model NAME``, and its settings
carry ``via: proxy``, the upstream, the provider and the model name. URLs are stored without
credentials, and no header is ever stored or logged.

Faults: the upstream has ``timeout`` seconds from the plugin's request to answer (every row of a
repair, or the first byte of a passed-through answer); past it, or when it cannot be reached, the
plugin gets a 504 or 502 in its API's error shape; an error status from the upstream is passed
back as it came. A plugin that disconnects cancels its request's upstream requests (the server
cancels a handler whose client went away).
"""

from __future__ import annotations

import asyncio
import json
import logging
import signal
import uuid
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from ..admission import EveryFewSeconds, Limits, LoopErrors, Site, read_body
from ..backends.stop import trim_completion
from ..config import Settings
from ..defects import DefectStore
from ..demutate import demutate
from ..engine import Engine, Prepared
from ..errors import (
    BackendError,
    BackendResponseError,
    BackendTimeout,
    BackendUnavailable,
    ConfigError,
    DefectLogError,
)
from ..fit import fit_completion
from ..safe_text import model_json, model_text
from ..types import EngineResult, Prompt
from .apis import APIS, Api, Ask, BadAsk, pieces
from .layout import SUFFIX_FIELD
from .upstream import Rows, Upstream, UpstreamRefused

log = logging.getLogger(__name__)

MODES = ("repair", "monitor", "off")
MAX_BACKGROUND = 2  # monitor-mode checks running at once; more are skipped (and counted)
MAX_BODY_BYTES = 8 * 1024 * 1024  # a completion request's body, read whole to be looked at
MAX_PROMPT_CHARS = 256 * 1024  # code before and after the cursor repaired at most; more: passed through
MAX_REPAIRS = 8  # repairs in flight at once; more are passed through


@dataclass(frozen=True)
class ProxyConfig:
    """What ``cctest proxy`` is told: the upstream, its API, the mode, and the engine's settings
    (``settings.timeout`` is the upstream deadline; ``defect_log`` and ``log_all`` the log's)."""

    upstream: str
    provider: str = "openai"
    mode: str = "repair"
    settings: Settings = field(default_factory=Settings)
    record: bool = True  # write the defect log (tests and benchmarks may turn it off)
    limits: Limits = field(default_factory=Limits)  # slow and greedy clients (``cctest.admission``)
    max_prompt_chars: int = MAX_PROMPT_CHARS  # a longer prompt (before and after the cursor) passes through
    max_repairs: int = MAX_REPAIRS  # repairs in flight at once; more pass through

    def __post_init__(self) -> None:
        if self.max_prompt_chars < 1 or self.max_repairs < 1:
            raise ConfigError("--max-prompt-chars and --max-repairs must be at least 1.")
        if self.provider not in APIS:
            raise ConfigError(f"unknown provider '{self.provider}'; choose {', '.join(APIS)}.")
        if self.mode not in MODES:
            raise ConfigError(f"unknown mode '{self.mode}'; choose {', '.join(MODES)}.")
        if not self.upstream.startswith(("http://", "https://")):
            raise ConfigError(
                f"'{self.upstream[:200]}' is not an http(s) URL; give the model server's address, "
                "e.g. http://127.0.0.1:11434."
            )


def chosen_pieces(result: EngineResult) -> list[str]:
    """The repaired completion in the pieces a stream carries, when it is whole before the first
    (the rows were completed whole: ``decide_after`` 0, or an upstream that does not stream)."""
    return pieces(result.completion)


def chosen_so_far(prepared: Prepared, settings: Settings, rows: Rows) -> str:
    """The chosen row's text read so far, as the repaired completion will begin: cut at its
    natural end, fitted to the completion scope, mapped back to the prompt's names; while the row
    runs, its complete lines only (the last line may yet be cut, or a name in it renamed)."""
    chosen = rows.chosen
    if chosen is None or chosen >= len(rows.streams) or chosen >= len(prepared.texts):
        return ""
    row = rows.streams[chosen]
    raw = row.outcome()
    if not isinstance(raw, str):
        return ""
    text = fit_completion(prepared.texts[chosen], raw, prepared.suffixes[chosen], settings.completion_scope)
    if chosen:
        text = demutate(text, prepared.renames(chosen))
    return text if row.ended is not None else text[: text.rfind("\n") + 1]


def chosen_failure(rows: Rows) -> BackendError | None:
    """The failure of the row chosen early, when its upstream stream broke, stalled past the
    deadline or ended unfinished after the decision: the engine then keeps its first tokens, but
    the plugin must not take them for a whole completion."""
    chosen = rows.chosen
    if chosen is None or chosen >= len(rows.streams):
        return None
    return rows.streams[chosen].error


def original_failure(result: EngineResult) -> BackendError | None:
    """The original row's failure: a repair then answers the plain row (``Proxy._unrepaired``)."""
    error = result.completions[0].error if result.completions else None
    return BackendResponseError(error) if error else None


def ending(first: Any, latest: Any) -> Any:
    """What a stream's last event is built on: the upstream's answer as it ended (its usage, its
    finish reason), under the ids the stream began with."""
    if isinstance(first, dict) and isinstance(latest, dict):
        return {**latest, **{k: first[k] for k in ("id", "created") if k in first}}
    return latest if latest is not None else first


RAW = web.RequestKey("cctest_raw", bytes)  # a repaired request's body, as the plugin sent it


class Proxy:
    """The proxy's state: the upstream, the API it speaks, the defect log, background checks."""

    def __init__(self, config: ProxyConfig) -> None:
        self.config = config
        self.api: Api = APIS[config.provider]
        self.settings = config.settings
        self.upstream = Upstream(config.upstream, timeout=self.settings.timeout)
        self.counters: Counter[str] = Counter()
        self._store: DefectStore | None = None
        self._store_failed = False
        self._background: set[asyncio.Task[None]] = set()
        self.repairs = 0  # in flight now
        self._busy = EveryFewSeconds()

    # -- the one handler ------------------------------------------------------------------------

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.counters["requests"] += 1
        if self.config.mode == "off" or request.method != "POST" or request.path not in self.api.paths:
            return await self._forward(request, None)
        raw = await self._body(request)
        if isinstance(raw, web.Response):
            return raw
        try:  # a lone surrogate ("\\ud800", which JSON allows) made safe where it enters
            body = model_json(json.loads(raw))
        except (ValueError, RecursionError):
            body = None
        try:
            ask = self.api.read(request.path, body)
        except BadAsk as exc:
            log.info("%s %s: 400 %s", request.method, request.path[:200], exc)
            return self.api.error(400, str(exc), "invalid_request_error")
        if ask is None or not ask.is_python:
            return await self._forward(request, raw)
        size = len(ask.prefix) + len(ask.suffix)
        if size > self.config.max_prompt_chars:  # neither repaired nor checked (monitor mode)
            self.counters["too_long"] += 1
            log.warning(
                "a prompt of %d characters is over --max-prompt-chars (%d): passed through unrepaired",
                size,
                self.config.max_prompt_chars,
            )
            return await self._forward(request, raw)
        if self.config.mode == "monitor":
            return await self._monitor(request, raw, ask)
        if self.repairs >= self.config.max_repairs:
            self.counters["busy"] += 1
            self._busy(
                "%d repairs in flight (--max-repairs): a request passed through unrepaired", self.repairs
            )
            return await self._forward(request, raw)
        self.repairs += 1
        try:
            return await self._repair(request, raw, ask)
        finally:
            self.repairs -= 1

    async def _body(self, request: web.Request) -> bytes | web.Response:
        """A completion request's body, read whole; else the 413 or 408 that says why not, in the
        API's shape (``cctest.admission.read_body``)."""
        return await read_body(
            request,
            MAX_BODY_BYTES,
            self.config.limits.request_timeout,
            lambda status, message, kind, code: self.api.error(status, message, kind),
            "proxy",
        )

    def _deadline(self) -> float:
        return asyncio.get_running_loop().time() + self.settings.timeout

    async def _forward(
        self,
        request: web.Request,
        raw: bytes | None,
        tee: bytearray | None = None,
        deadline: float | None = None,
    ) -> web.StreamResponse:
        self.counters["passed_through"] += 1
        try:
            return await self.upstream.forward(request, raw, deadline or self._deadline(), tee)
        except BackendError as exc:
            return self._failure(exc)

    def _failure(self, exc: BackendError) -> web.Response:
        """The plugin's answer when the upstream failed: its own error as it came, else a 504
        (no answer in time) or a 502 in the API's shape."""
        self.counters["upstream_errors"] += 1
        if isinstance(exc, UpstreamRefused):
            headers = {"Content-Type": exc.content_type} if exc.content_type else None
            return web.Response(status=exc.status, body=exc.body, headers=headers)
        log.info("upstream failure: %s", exc)
        if isinstance(exc, BackendTimeout):
            return self.api.error(504, str(exc), "timeout")
        kind = "upstream_unavailable" if isinstance(exc, BackendUnavailable) else "bad_upstream_answer"
        return self.api.error(502, str(exc), kind)

    async def _unrepaired(self, request: web.Request, exc: BackendError, rows: Rows) -> web.StreamResponse:
        """A repair whose original row failed (rows that overflowed the server's slots, a stream
        the server interrupted, every row failing): the plugin's request passed through as it
        came, by the same deadline, so it gets what a direct request gets, never an error the
        repair alone caused. A deadline already spent is a 504."""
        raw = request.get(RAW)
        if isinstance(exc, BackendTimeout) or not isinstance(raw, bytes):
            return self._failure(exc)
        self.counters["unrepaired"] += 1
        log.info("the repair failed (%s); the plain request is passed through", exc)
        return await self._forward(request, raw, deadline=rows.deadline)

    # -- repair ---------------------------------------------------------------------------------

    async def _repair(self, request: web.Request, raw: bytes, ask: Ask) -> web.StreamResponse:
        if await self.upstream.rows_at_once(request.headers, 1 + self.settings.mutants) is not None:
            self.counters["monitored_for_slots"] += 1  # too few slots: answered at once, checked after
            return await self._monitor(request, raw, ask)
        request[RAW] = raw  # for the plain answer when the repair fails (``_unrepaired``)
        if self.api.name == "openai" and ask.layout.kind == SUFFIX_FIELD:
            await self.upstream.check_suffix(request.headers, ask, self._deadline())
        rows = Rows(self.upstream, self.api, ask, request.headers, self._deadline())
        engine = Engine(rows, self.settings)
        prompt = Prompt(text=ask.prefix, suffix=ask.suffix)
        try:  # the mutants are made off the event loop (libcst); ``run`` then finds them cached
            prepared = await asyncio.to_thread(engine.prepare, prompt)
        except Exception as exc:  # noqa: BLE001 - code the mutators cannot read: as the plugin sent it
            log.info("no mutants for this prompt (%s); passed through", type(exc).__name__)
            return await self._forward(request, raw)
        if ask.stream:
            return await self._repair_streaming(request, ask, engine, prepared, rows, prompt)
        try:
            result = await engine.run(prompt)
        except BackendError as exc:
            return await self._unrepaired(request, exc, rows)
        if (cut := chosen_failure(rows) or original_failure(result)) is not None:
            return await self._unrepaired(request, cut, rows)
        self.counters["repaired"] += 1
        self._record(result, ask, rows, "repair")
        source = rows.shape_source()
        if not ask.stream:
            return web.json_response(self.api.answer(ask, source, result.completion))
        return await self._stream(request, ask, source, chosen_pieces(result), result.completion)

    async def _repair_streaming(
        self,
        request: web.Request,
        ask: Ask,
        engine: Engine,
        prepared: Prepared,
        rows: Rows,
        prompt: Prompt,
    ) -> web.StreamResponse:
        """A repair the plugin asked to stream: once the decision is made, the chosen row's text
        goes to the plugin as it comes (``chosen_so_far``), the rest when the engine is done."""
        run = asyncio.create_task(engine.run(prompt))
        try:
            return await self._streaming(request, ask, prepared, rows, run)
        finally:  # the plugin left (the handler is cancelled) or its connection broke: every row goes
            if not run.done():
                run.cancel()
                await asyncio.gather(run, return_exceptions=True)

    async def _streaming(
        self,
        request: web.Request,
        ask: Ask,
        prepared: Prepared,
        rows: Rows,
        run: asyncio.Task[EngineResult],
    ) -> web.StreamResponse:
        decided = asyncio.create_task(rows.decided.wait())
        try:
            await asyncio.wait((run, decided), return_when=asyncio.FIRST_COMPLETED)
        finally:
            decided.cancel()
        if run.done() or rows.chosen is None:  # no early decision: every row whole
            try:
                result = await run
            except BackendError as exc:
                return await self._unrepaired(request, exc, rows)
            if (cut := chosen_failure(rows) or original_failure(result)) is not None:
                return await self._unrepaired(request, cut, rows)
            self.counters["repaired"] += 1
            self._record(result, ask, rows, "repair")
            return await self._stream(
                request, ask, rows.shape_source(), chosen_pieces(result), result.completion
            )
        if rows.streams and rows.streams[0].error is not None:  # the original row failed: no repair
            run.cancel()
            await asyncio.gather(run, return_exceptions=True)
            return await self._unrepaired(request, rows.streams[0].error, rows)
        out = web.StreamResponse(
            status=200, headers={"Content-Type": self.api.stream_type(ask), "Cache-Control": "no-cache"}
        )
        await out.prepare(request)
        source = self.api.stream_source(ask, rows.shape_source())  # the upstream's ids
        sent, n = "", 0
        try:
            while not run.done():
                progress = asyncio.create_task(rows.progress.wait())
                try:
                    await asyncio.wait((run, progress), return_when=asyncio.FIRST_COMPLETED)
                finally:
                    progress.cancel()
                rows.progress.clear()
                text = chosen_so_far(prepared, self.settings, rows)
                if len(text) > len(sent) and text.startswith(sent):
                    n += 1
                    await out.write(self.api.stream_piece(ask, source, text[len(sent) :], n))
                    sent = text
            result = await run
            if (cut := chosen_failure(rows)) is not None:
                raise cut
        except BackendError as exc:  # the answer has begun: the plugin's connection ends unfinished
            log.info("upstream failure while streaming: %s", exc)
            self.counters["upstream_errors"] += 1
            if request.transport is not None:
                request.transport.close()
            return out
        self.counters["repaired"] += 1
        self._record(result, ask, rows, "repair")
        final = result.completion
        if not final.startswith(sent):  # cannot happen by construction; counted, never silent
            self.counters["stream_mismatch"] += 1
            log.warning("the streamed start of a repaired completion is not the repaired completion's")
        elif len(final) > len(sent):
            n += 1
            await out.write(self.api.stream_piece(ask, source, final[len(sent) :], n))
        await out.write(self.api.stream_end(ask, ending(source, rows.shape_source()), final, n))
        await out.write_eof()
        return out

    async def _stream(
        self, request: web.Request, ask: Ask, source: Any, pieces: Sequence[str], text: str
    ) -> web.StreamResponse:
        out = web.StreamResponse(
            status=200, headers={"Content-Type": self.api.stream_type(ask), "Cache-Control": "no-cache"}
        )
        await out.prepare(request)
        for chunk in self.api.stream(ask, source, pieces, text):
            await out.write(chunk)
        await out.write_eof()
        return out

    # -- monitor --------------------------------------------------------------------------------

    async def _monitor(self, request: web.Request, raw: bytes, ask: Ask) -> web.StreamResponse:
        tee = bytearray()
        answer = await self._forward(request, raw, tee)
        if answer.status != 200:
            return answer
        if len(self._background) >= MAX_BACKGROUND:
            self.counters["monitor_skipped"] += 1
            return answer
        headers = dict(request.headers)  # the credentials the check needs; held only by its task
        task = asyncio.create_task(self._check(ask, bytes(tee), headers))
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return answer

    async def _check(self, ask: Ask, payload: bytes, headers: Mapping[str, str]) -> None:
        """Monitor mode's verdict on an answer already given: the mutants completed, compared with
        the upstream's own completion, recorded."""
        try:
            own = self.api.own_text(payload, ask.stream)
        except (ValueError, KeyError, IndexError, TypeError, AttributeError, RecursionError):
            own = None
        if own is None:
            return
        rows = Rows(self.upstream, self.api, ask, headers, self._deadline())
        original = trim_completion(ask.prefix, model_text(own)[: rows.max_chars], rows.stop)
        engine = Engine(rows, self.settings)
        prompt = Prompt(text=ask.prefix, suffix=ask.suffix)
        try:
            await asyncio.to_thread(engine.rows, prompt)
            result = await engine.run(prompt, original=original)
        except Exception as exc:  # noqa: BLE001 - a check that fails records nothing; the plugin has its answer
            log.info("the monitor check failed: %s", exc)
            return
        self.counters["monitor_checks"] += 1
        self._record(result, ask, rows, "monitor")

    # -- the defect log -------------------------------------------------------------------------

    def _record(self, result: EngineResult, ask: Ask, rows: Rows, mode: str) -> None:
        if result.is_suspect:
            self.counters["suspect"] += 1
        if not self.config.record or not (result.is_suspect or self.settings.log_all):
            return
        task = asyncio.create_task(self._write(result, ask, rows, mode))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def store(self) -> DefectStore | None:
        if self._store is None and not self._store_failed:
            try:
                self._store = DefectStore(self.settings.defect_log_path())
            except DefectLogError as exc:
                self._store_failed = True
                log.error("defects will not be recorded: %s", exc)
        return self._store

    async def _write(self, result: EngineResult, ask: Ask, rows: Rows, mode: str) -> None:
        store = self.store()
        if store is None:
            return
        before = ask.prefix
        settings = {
            **self.settings.to_dict(),
            "via": "proxy",
            "upstream": self.upstream.shown,
            "provider": self.api.name,
            "model_name": ask.model,
            "layout": ask.layout.describe(),
        }
        try:
            await asyncio.to_thread(
                store.add,
                result,
                request_id=f"proxy-{uuid.uuid4().hex}",
                uri=f"proxy:{self.upstream.shown}",
                line=before.count("\n"),
                col=len(before) - before.rfind("\n") - 1,
                mode=mode,
                model=rows.describe(),
                settings=settings,
            )
            self.counters["recorded"] += 1
        except DefectLogError as exc:
            log.error("a defect could not be recorded: %s", exc)
        except Exception as exc:  # noqa: BLE001 - a record that cannot be written is said, never lost silently
            log.error("a defect could not be recorded (%s: %s)", type(exc).__name__, exc)

    async def drain(self) -> None:
        """Wait for the background checks and log writes under way."""
        while self._background:
            await asyncio.wait(set(self._background))

    async def aclose(self) -> None:
        for task in list(self._background):
            task.cancel()
        await asyncio.gather(*self._background, return_exceptions=True)
        await self.upstream.aclose()
        if self._store is not None:
            self._store.close()


PROXY_KEY = web.AppKey("proxy", Proxy)


def create_app(config: ProxyConfig) -> web.Application:
    """The proxy as an aiohttp application (every path, every method)."""
    proxy = Proxy(config)
    app = web.Application(client_max_size=MAX_BODY_BYTES)
    app[PROXY_KEY] = proxy
    app.router.add_route("*", "/{tail:.*}", proxy.handle)

    async def close(app: web.Application) -> None:
        await proxy.aclose()

    app.on_cleanup.append(close)
    return app


async def start_proxy(
    config: ProxyConfig, host: str = "127.0.0.1", port: int = 0
) -> tuple[web.AppRunner, str]:
    """Start the proxy on ``host:port`` (0: a free port); returns the runner and its base URL.
    Its connections are bounded by ``config.limits`` (``cctest.admission``), and what aiohttp's
    HTTP parser refuses is answered in the API's error shape."""
    api = APIS[config.provider]

    def error(status: int, message: str, kind: str, code: str) -> web.Response:
        return api.error(status, message, kind)

    runner = web.AppRunner(
        create_app(config), handler_cancellation=True, access_log=None, handle_signals=False
    )
    await runner.setup()
    site = Site(runner, host, port, config.limits, error)
    await site.start()
    bound = int(runner.addresses[0][1])
    shown = f"[{host}]" if ":" in host else host
    return runner, f"http://{shown}:{bound}"


def run(config: ProxyConfig, host: str, port: int) -> None:
    """``cctest proxy``: serve until SIGINT or SIGTERM."""

    async def main() -> None:
        stop = asyncio.Event()  # the handlers first: once the line is out, a SIGTERM stops cleanly
        loop = asyncio.get_running_loop()
        loop.set_exception_handler(LoopErrors(None))  # failed accepts in one line, not a traceback each
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        runner, url = await start_proxy(config, host, port)
        print(
            f"cctest proxy: {url} -> {Upstream(config.upstream).shown} ({config.provider}, {config.mode})",
            flush=True,
        )
        try:
            await stop.wait()
        finally:
            await runner.cleanup()

    asyncio.run(main())


__all__ = ["MODES", "PROXY_KEY", "Proxy", "ProxyConfig", "chosen_pieces", "create_app", "run", "start_proxy"]
