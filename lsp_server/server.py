"""The cctest language server: repaired completions over LSP, suspected defects into the log.

State lives on ``CCTestServer`` (a pygls ``LanguageServer``); the handlers at the bottom are thin:
get the document, call ``CCTestServer.serve``, convert with ``lsp_server.convert``.

How a request is served (``serve``):

1. ``mode == "off"`` → nothing.
2. prompt = document text before the cursor, suffix = after it (``convert.prompt_at``).
3. the LRU cache, keyed by (prompt, suffix, settings), answers repeats at once.
4. an identical request already running is joined, not repeated (a client asking for inline and
   for ordinary completion at the same cursor costs one engine run);
5. otherwise the document's previous job is cancelled (latest request wins: the user has typed
   on, so its answer would be stale) and a new job starts, after ``debounceMs`` if set;
6. the job runs the engine (``repair``) or one plain completion (``monitor``, which then checks
   it in the background); model work is the backend's and never blocks the event loop;
7. suspected defects (``EngineResult.is_suspect``), or every result with ``logAll``, are written
   to the defect log in a worker thread, after the answer is sent.

``$/cancelRequest`` cancels the handler's task (pygls does so for coroutine handlers); a job
whose every waiter is gone is cancelled too. A backend failure gives an empty answer and ONE
``window/logMessage`` per failure streak (another when the backend answers again).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import sys
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, BinaryIO, TypeVar

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcInvalidParams
from pygls.lsp.server import LanguageServer
from pygls.workspace import TextDocument

from cctest import __version__
from cctest._cache import LRU
from cctest.backends.base import Backend
from cctest.config import Settings
from cctest.engine import Engine
from cctest.errors import BackendError, BackendTimeout, DefectLogError
from cctest.redact import redact_settings
from cctest.types import EngineResult, Prompt

from . import convert, defect_queries, transport
from . import settings as wire
from .backends import BackendHolder, describe_failure
from .defect_recorder import DefectRecorder, Ticket
from .documents import DocumentUnavailable, document
from .jobs import JobTable
from .protocol import CCTestProtocol
from .stats import Stats

log = logging.getLogger("lsp_server")

CACHE_SIZE = 256  # engine results kept for repeated prompts
SERVED_SIZE = 4096  # request ids remembered for acceptance reports
MAX_BACKGROUND = 2  # monitor-mode checks running at once; more are skipped (and counted)
VERDICT_NOTIFICATION = "cctest/verdict"

T = TypeVar("T")


@dataclasses.dataclass
class Outcome:
    """What one engine job produced; shared by every request that asked for the same prompt."""

    completion: str
    result: EngineResult | None  # None in monitor mode until the background check is done
    mode: str
    ticket: Ticket = dataclasses.field(default_factory=Ticket)


@dataclasses.dataclass
class Served:
    """One answered request, while its handler converts it."""

    request_id: str
    uri: str
    outcome: Outcome
    result: EngineResult | None  # the verdict known when the answer was sent (monitor: maybe none yet)


class CCTestServer(LanguageServer):
    """The language server: settings, backend, cache, jobs, defect log and counters."""

    def __init__(self) -> None:
        super().__init__(
            "cctest-lsp",
            __version__,
            protocol_cls=CCTestProtocol,
            text_document_sync_kind=lsp.TextDocumentSyncKind.Incremental,
        )
        self.init_options: dict[str, Any] = {}
        self.overrides: dict[str, Any] = {}
        self.settings = Settings()
        self._pending_warnings: list[str] = []
        self._healthy = True
        self.cache: LRU[tuple[Any, ...], Outcome] = LRU(CACHE_SIZE)
        self.served: LRU[str, tuple[str, Ticket]] = LRU(SERVED_SIZE)  # request id -> (uri, ticket)
        self.numbers = Stats()
        self.counters: Counter[str] = self.numbers.counters
        self.jobs: JobTable[Outcome] = JobTable(self.counters)
        self.backends = BackendHolder(lambda: self.settings, self.spawn, self.counters)
        self._tasks: set[asyncio.Task[Any]] = set()  # background checks and writes, kept alive
        self._writes: set[asyncio.Task[Any]] = set()
        self._background_checks = 0
        self.recorder = DefectRecorder(
            lambda: self.settings,
            self.spawn,
            self.drain_writes,
            self.counters,
            self.log_to_client,
            lambda: self.backends.current,
            self.served,
        )

    # -- transports -----------------------------------------------------------------------------
    def start_io(self, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None) -> None:
        transport.serve_stdio(self, stdin or sys.stdin.buffer, stdout or sys.stdout.buffer)

    def start_tcp(self, host: str, port: int, announce: Callable[[str], Any] | None = None) -> None:
        transport.serve_tcp(self, host, port, announce)

    # -- messages to the user -------------------------------------------------------------------
    def log_to_client(self, message: str, kind: lsp.MessageType = lsp.MessageType.Info) -> None:
        (log.error if kind == lsp.MessageType.Error else log.info)("%s", message)
        try:
            self.window_log_message(lsp.LogMessageParams(type=kind, message=message))
        except Exception:  # no transport yet, or it is gone: stderr has it
            log.debug("could not send a log message", exc_info=True)

    def warn_user(self, message: str) -> None:
        log.warning("%s", message)
        try:
            self.window_show_message(lsp.ShowMessageParams(type=lsp.MessageType.Warning, message=message))
        except Exception:
            log.debug("could not send a message", exc_info=True)

    def report_server_error(self, error: Exception, source: Any) -> None:
        # pygls pops up "Error in server" for a malformed notification; a log line is enough
        if source is not None and "Request" in getattr(source, "__name__", ""):
            return
        self.log_to_client(f"cctest: a message could not be handled: {error}", lsp.MessageType.Warning)

    # -- settings -------------------------------------------------------------------------------
    def apply_settings(self) -> list[str]:
        """Rebuild the settings from initializationOptions + later changes; warn about bad values."""
        settings, errors = wire.parse({**self.init_options, **self.overrides})
        old = self.settings
        self.settings = settings
        if wire.backend_key(settings) != wire.backend_key(old):
            # the backend is rebuilt lazily by the next request; cached answers came from the old one
            self.cache.clear()
        if settings.defect_log_path() != old.defect_log_path():
            self.recorder.reopen()
        return errors

    def set_init_options(self, raw: Any) -> None:
        section, errors = wire.unwrap(raw)
        self.init_options = section
        errors += self.apply_settings()
        self._pending_warnings.extend(errors)

    async def change_configuration(self, raw: Any) -> None:
        if raw is None or (isinstance(raw, dict) and not raw):
            raw = await self._pull_configuration()
            if raw is None:
                return
        section, errors = wire.unwrap(raw)
        self.overrides.update(section)
        errors += self.apply_settings()
        self._warn_all(errors)
        log.info("settings: %s", redact_settings(wire.to_wire(self.settings)))

    async def _pull_configuration(self) -> Any:
        caps = self.client_capabilities.workspace if self.client_capabilities else None
        if not (caps and caps.configuration):
            return None
        try:
            values = await self.workspace_configuration_async(
                lsp.ConfigurationParams(items=[lsp.ConfigurationItem(section=wire.SECTION)])
            )
        except Exception as exc:
            self.log_to_client(f"cctest: could not read the settings: {exc}", lsp.MessageType.Warning)
            return None
        return values[0] if values else None

    def _warn_all(self, errors: list[str]) -> None:
        if errors:
            self.warn_user(" ".join(errors))

    def flush_warnings(self) -> None:
        errors, self._pending_warnings = self._pending_warnings, []
        self._warn_all(errors)

    # -- the backend ----------------------------------------------------------------------------
    async def backend(self) -> Backend:
        return await self.backends.get()

    async def warm_up(self) -> None:
        """Build the backend (load the model) before the first request needs it."""
        if self.settings.mode == "off":
            return
        try:
            await self.backend()
        except BackendError as exc:
            self._backend_failed(exc)

    def _backend_failed(self, exc: BaseException) -> None:
        self.counters["failures"] += 1
        if self._healthy:
            self._healthy = False
            self.log_to_client(
                f"cctest: the {self.settings.backend} backend failed: {describe_failure(exc)} "
                "Completions are empty until it answers again.",
                lsp.MessageType.Error,
            )
        else:
            log.info("backend still failing: %s", exc)

    def _backend_ok(self) -> None:
        if not self._healthy:
            self._healthy = True
            self.log_to_client(
                f"cctest: the {self.settings.backend} backend answers again.", lsp.MessageType.Info
            )

    # -- background tasks -----------------------------------------------------------------------
    def spawn(self, coro: Coroutine[Any, Any, Any], *, write: bool = False) -> asyncio.Task[Any]:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        if write:
            self._writes.add(task)
            task.add_done_callback(self._writes.discard)
        return task

    async def drain_writes(self) -> None:
        """Wait for defect-log writes already started (so a read sees them)."""
        while self._writes:
            await asyncio.gather(*list(self._writes), return_exceptions=True)

    # -- serving one request --------------------------------------------------------------------
    async def serve(self, uri: str, position: lsp.Position) -> tuple[Served, TextDocument, int | None] | None:
        """Answer a completion request at ``position`` of ``uri``; None when there is nothing."""
        settings = self.settings
        if settings.mode == "off":
            return None
        t0 = time.perf_counter()
        self.counters["requests"] += 1
        try:
            doc = document(self.workspace, uri)
        except DocumentUnavailable as exc:  # not open, and not a file to read: nothing to complete
            log.warning("no text for a completion: %s", exc)
            self.counters["no_document"] += 1
            return None
        prompt = convert.prompt_at(doc, position)
        version = doc.version
        key = (prompt.text, prompt.suffix, settings)
        request_id = uuid.uuid4().hex[:16]
        outcome = self.cache.get(key)
        fresh = outcome is None
        if outcome is not None:
            self.counters["cache_hits"] += 1
            known = outcome.result  # monitor mode: the background check's verdict, once it is in
        else:
            outcome = await self._join(uri, key, prompt, settings, request_id)
            if outcome is None:
                return None
            # monitor mode answers before its check: whatever the check did meanwhile is for later
            known = outcome.result if outcome.mode == "repair" else None
        served = Served(request_id=request_id, uri=uri, outcome=outcome, result=known)
        self.served.put(request_id, (uri, outcome.ticket))
        self.counters["answered"] += 1
        self.notify_verdict(uri, request_id, outcome, known, fresh)
        if fresh and known is not None:
            # the server's own cost around an engine run (JSON and stdio excluded): cctest/stats
            spent = (time.perf_counter() - t0) * 1000
            self.numbers.serve_overhead(spent - known.timings_ms["total"])
        return served, doc, version

    def notify_verdict(
        self, uri: str, request_id: str, outcome: Outcome, result: EngineResult | None, fresh: bool = False
    ) -> None:
        """``cctest/verdict``: the verdict of an answered request, for a client's status line.

        ``engineMs`` (the engine's own time, model included) is there when this request ran it.
        """
        params: dict[str, Any] = {
            "uri": uri,
            "requestId": request_id,
            "mode": outcome.mode,
            "text": convert.verdict_text(result, outcome.mode),
        }
        if result is not None:
            params.update(
                outliers=len(result.outliers), total=len(result.completions), suspect=result.is_suspect
            )
            if fresh:
                params["engineMs"] = round(result.timings_ms["total"], 4)
        # after the answer, not before it: the client reads the answer first
        asyncio.get_running_loop().call_later(0, self._send_verdict, params)

    def _send_verdict(self, params: dict[str, Any]) -> None:
        try:
            self.protocol.notify(VERDICT_NOTIFICATION, params)
        except Exception:
            log.debug("could not send the verdict", exc_info=True)

    async def _join(
        self, uri: str, key: tuple[Any, ...], prompt: Prompt, settings: Settings, request_id: str
    ) -> Outcome | None:
        try:
            return await self.jobs.run(uri, key, lambda: self._compute(uri, prompt, settings, request_id))
        except BackendError as exc:
            self._backend_failed(exc)
            return None
        except Exception as exc:  # a bug in a stage: log it, answer nothing, stay up
            log.exception("serving %s failed", uri)
            self._backend_failed(exc)
            return None

    async def _compute(self, uri: str, prompt: Prompt, settings: Settings, request_id: str) -> Outcome:
        backend = await self.backend()  # a model load is not the request's: it has its own life
        # the request's deadline covers its debounce and the model call (one per request), as a
        # safety net over the backend's own timeout
        seconds = settings.debounce_ms / 1000 + settings.timeout + 1
        key = (prompt.text, prompt.suffix, settings)
        if settings.mode == "monitor":
            first = await _within(seconds, settings, self._plain_completion(backend, prompt, settings))
            self._backend_ok()
            outcome = Outcome(completion=first, result=None, mode="monitor")
            self.cache.put(key, outcome)
            self._check_in_background(outcome, prompt, settings, uri, request_id, backend)
            return outcome
        result = await _within(seconds, settings, self._repaired(backend, prompt, settings))
        self._backend_ok()
        self.numbers.engine_run(result)
        outcome = Outcome(completion=result.completion, result=result, mode="repair")
        self.cache.put(key, outcome)
        self.recorder.maybe_record(outcome.result, outcome.ticket, outcome.mode, request_id, uri, settings)
        return outcome

    @staticmethod
    async def _plain_completion(backend: Backend, prompt: Prompt, settings: Settings) -> str:
        if settings.debounce_ms:
            await asyncio.sleep(settings.debounce_ms / 1000)  # a newer request cancels us here
        [first] = await backend.complete([prompt.text], suffixes=[prompt.suffix])
        if isinstance(first, BackendError):
            raise first
        return first

    @staticmethod
    async def _repaired(backend: Backend, prompt: Prompt, settings: Settings) -> EngineResult:
        if settings.debounce_ms:
            await asyncio.sleep(settings.debounce_ms / 1000)  # a newer request cancels us here
        return await Engine(backend, settings).run(prompt)

    def _check_in_background(
        self,
        outcome: Outcome,
        prompt: Prompt,
        settings: Settings,
        uri: str,
        request_id: str,
        backend: Backend,
    ) -> None:
        if self._background_checks >= MAX_BACKGROUND:
            self.counters["monitor_skipped"] += 1
            return
        self._background_checks += 1

        async def check() -> None:
            try:
                result = await Engine(backend, settings).run(prompt, original=outcome.completion)
            except Exception as exc:
                log.info("monitor check of %s failed: %s", uri, exc)
                self.counters["monitor_failed"] += 1
                return
            finally:
                self._background_checks -= 1
            self.counters["monitor_checks"] += 1
            self.numbers.engine_run(result)
            outcome.result = result
            self.recorder.maybe_record(
                outcome.result, outcome.ticket, outcome.mode, request_id, uri, settings
            )
            self.notify_verdict(uri, request_id, outcome, result)

        self.spawn(check())

    # -- stats ---------------------------------------------------------------------------------
    def stats(self) -> dict[str, Any]:
        store = self.recorder.store()
        log_stats: dict[str, Any] | None
        try:
            log_stats = store.stats() if store is not None else None
        except DefectLogError as exc:
            log_stats = {"error": str(exc)}
        return {
            **self.numbers.snapshot(),
            "backend": self.backends.describe(),
            "settings": wire.to_wire(self.settings),
            "defectLog": str(self.settings.defect_log_path()),
            "log": log_stats,
        }


async def _within(seconds: float, settings: Settings, work: Awaitable[T]) -> T:
    """``work``, or BackendTimeout after ``seconds`` (``asyncio.timeout``: unlike ``wait_for`` it
    adds no task; on Python 3.10 the backends' own timeouts are the only ones)."""
    if not hasattr(asyncio, "timeout"):  # pragma: no cover - Python 3.10
        return await work
    try:
        async with asyncio.timeout(seconds):
            return await work
    except asyncio.TimeoutError as exc:
        raise BackendTimeout(f"no completion within {settings.timeout:g} seconds.") from exc


server = CCTestServer()


# -- lifecycle and settings ---------------------------------------------------------------------
@server.feature(lsp.INITIALIZE)
def initialize(ls: CCTestServer, params: lsp.InitializeParams) -> None:
    ls.set_init_options(params.initialization_options)


@server.feature(lsp.INITIALIZED)
def initialized(ls: CCTestServer, params: lsp.InitializedParams) -> None:
    ls.flush_warnings()
    ls.spawn(ls.warm_up())


@server.feature(lsp.WORKSPACE_DID_CHANGE_CONFIGURATION)
async def did_change_configuration(ls: CCTestServer, params: lsp.DidChangeConfigurationParams) -> None:
    await ls.change_configuration(params.settings)


@server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: CCTestServer, params: lsp.DidCloseTextDocumentParams) -> None:
    ls.jobs.cancel_document(params.text_document.uri)


# -- completions --------------------------------------------------------------------------------
def _still_current(doc: TextDocument, version: int | None) -> bool:
    return doc.version == version


@server.feature(lsp.TEXT_DOCUMENT_INLINE_COMPLETION, lsp.InlineCompletionOptions())
async def inline_completion(
    ls: CCTestServer, params: lsp.InlineCompletionParams
) -> lsp.InlineCompletionList | None:
    answer = await ls.serve(params.text_document.uri, params.position)
    if answer is None:
        return lsp.InlineCompletionList(items=[])
    served, doc, version = answer
    if not _still_current(doc, version):  # the document changed while we worked: positions moved
        return lsp.InlineCompletionList(items=[])
    return convert.inline_completion(doc, params.position, served.outcome.completion, served.request_id)


@server.feature(lsp.TEXT_DOCUMENT_COMPLETION, lsp.CompletionOptions(resolve_provider=False))
async def completion(ls: CCTestServer, params: lsp.CompletionParams) -> lsp.CompletionList:
    answer = await ls.serve(params.text_document.uri, params.position)
    if answer is None:
        return lsp.CompletionList(is_incomplete=True, items=[])
    served, doc, version = answer
    if not _still_current(doc, version):
        return lsp.CompletionList(is_incomplete=True, items=[])
    outcome = served.outcome
    verdict = convert.verdict_text(served.result, outcome.mode)
    return convert.completion_list(
        doc, params.position, outcome.completion, served.request_id, verdict, served.result
    )


# -- custom requests ----------------------------------------------------------------------------
@server.feature("cctest/defects")
async def defects(ls: CCTestServer, params: Any) -> dict[str, Any]:
    """Records, newest first: params ``limit`` (1-1000, default 50), ``offset``, ``uri``, ``since``."""
    query = defect_queries.list_query(params)
    await ls.drain_writes()
    records, total = await defect_queries.list_records(ls.recorder.open_store(), query)
    return {"records": [convert.defect_to_wire(r) for r in records], "total": total}


@server.feature("cctest/stats")
async def stats(ls: CCTestServer, params: Any) -> dict[str, Any]:
    await ls.drain_writes()
    return ls.stats()


# -- commands -----------------------------------------------------------------------------------
@server.command("cctest.clearDefects")
async def clear_defects(ls: CCTestServer, *args: Any) -> dict[str, Any]:
    await ls.drain_writes()
    deleted = await asyncio.to_thread(ls.recorder.open_store().clear)
    return {"deleted": deleted}


@server.command("cctest.exportDefects")
async def export_defects(ls: CCTestServer, *args: Any) -> dict[str, Any]:
    """Arguments: ``[path, format]`` or ``[{"path": ..., "format": "jsonl"|"csv"}]``."""
    path, fmt = defect_queries.export_target(args)
    await ls.drain_writes()
    count = await defect_queries.export(ls.recorder.open_store(), path, fmt)
    return {"path": path, "format": fmt, "count": count}


@server.command(convert.ACCEPT_COMMAND)
async def accepted(ls: CCTestServer, *args: Any) -> dict[str, Any]:
    if len(args) != 1:
        raise JsonRpcInvalidParams(
            message="cctest.accepted takes one argument: the request id or the record id."
        )
    return await ls.recorder.accepted(defect_queries.plain(args[0]))
