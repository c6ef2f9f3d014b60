"""The cctest language server: repaired completions over LSP, suspected defects into the log.

``CCTestServer`` (a pygls ``LanguageServer``) holds the settings and hands the work to small parts
with one job each: ``jobs.JobTable`` (joins, supersedes and cancels jobs), ``runner.JobRunner`` (runs
one job), ``backends.BackendHolder`` (builds and closes the backend), ``health.BackendHealth`` (tells
the user when it fails and recovers), ``defect_recorder.DefectRecorder`` (the defect log),
``verdicts.VerdictNotifier`` (``cctest/verdict``), ``stats.Stats`` (counters) and
``background.BackgroundTasks``. The handlers at the bottom are thin: get the arguments, call the
server or one of its parts, convert with ``lsp_server.convert``.

How a request is served (``serve``):

1. ``mode == "off"`` → nothing.
2. prompt = document text before the cursor, suffix = after it (``convert.prompt_at``).
3. the LRU cache, keyed by (prompt, suffix, settings), answers repeats at once.
4. an identical request already running is joined, not repeated (a client asking for inline and
   for ordinary completion at the same cursor costs one engine run);
5. otherwise the document's previous job is cancelled (latest request wins: the user has typed
   on, so its answer would be stale) and a new job starts, after ``debounceMs`` if set;
6. the job (``JobRunner.run``) runs the engine (``repair``) or one plain completion (``monitor``,
   which then checks it in the background); model work is the backend's and never blocks the
   event loop;
7. suspected defects (``EngineResult.is_suspect``), or every result with ``logAll``, are written
   to the defect log in a worker thread, after the answer is sent.

``$/cancelRequest`` cancels the handler's task (pygls does so for coroutine handlers); a job
whose every waiter is gone is cancelled too. A backend failure gives an empty answer and ONE
``window/logMessage`` per failure streak (another when the backend answers again).
"""

from __future__ import annotations

import functools
import logging
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable, Hashable
from typing import Any, BinaryIO

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer

from cctest import __version__
from cctest.backends.base import Backend
from cctest.cache import LRU
from cctest.config import Settings
from cctest.errors import BackendError
from cctest.redact import redact_settings
from cctest.types import Prompt

from . import convert, defect_queries, transport
from . import settings as wire
from .backends import BackendHolder
from .background import BackgroundTasks
from .defect_recorder import DefectRecorder, Ticket
from .documents import DocumentUnavailable, document
from .health import BackendHealth
from .jobs import JobTable
from .protocol import CCTestProtocol
from .runner import JobResult, JobRunner, Served, cache_key
from .stats import Stats
from .verdicts import VerdictNotifier

log = logging.getLogger("lsp_server")

MODEL_NOTIFICATION = "cctest/model"  # a local model's load: loading, then ready or failed
JOB_CACHE_SIZE = 256  # job results kept for repeated prompts
SERVED_SIZE = 4096  # request ids remembered for acceptance reports


class CCTestServer(LanguageServer):
    """The language server: its settings, and the parts that do the work (see the module's doc)."""

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
        self.cache: LRU[Hashable, JobResult] = LRU(JOB_CACHE_SIZE)
        self.served: LRU[str, tuple[str, Ticket]] = LRU(SERVED_SIZE)  # request id -> (uri, ticket)
        self.numbers = Stats()
        self.counters: Counter[str] = self.numbers.counters
        self.background = BackgroundTasks()
        self.spawn = self.background.spawn
        self.jobs: JobTable[JobResult] = JobTable(self.counters)
        self.backends = BackendHolder(
            lambda: self.settings, self.spawn, self.counters, tell=self.tell_model_load
        )
        self.health = BackendHealth(self.counters, self.log_to_client, lambda: self.settings.backend)
        self.verdicts = VerdictNotifier(lambda method, params: self.protocol.notify(method, params))
        self.recorder = DefectRecorder(
            lambda: self.settings,
            self.spawn,
            self.background.drain_writes,
            self.counters,
            self.log_to_client,
            lambda: self.backends.current,
            self.served,
        )
        self.runner = JobRunner(
            self.backends, self.health, self.cache, self.numbers, self.recorder, self.verdicts, self.spawn
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

    def tell_model_load(self, params: dict[str, Any]) -> None:
        """A local model's load started or ended: a log line and ``cctest/model`` (the status bar's)."""
        self.log_to_client(params["text"])
        try:
            self.protocol.notify(MODEL_NOTIFICATION, params)
        except Exception:  # no transport, or it is gone: the log has it
            log.debug("could not send the model's state", exc_info=True)

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
            self.health.failed(exc)

    # -- serving one request --------------------------------------------------------------------
    async def serve(self, uri: str, position: lsp.Position) -> Served | None:
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
        request_id = uuid.uuid4().hex[:16]
        job = self.cache.get(cache_key(prompt, settings))
        fresh = job is None
        if job is not None:
            self.counters["cache_hits"] += 1
            known = job.result  # monitor mode: the background check's verdict, once it is in
        else:
            job = await self._join(uri, prompt, settings, request_id)
            if job is None:
                return None
            # monitor mode answers before its check: whatever the check did meanwhile is for later
            known = job.result if job.mode == "repair" else None
        self.served.put(request_id, (uri, job.ticket))
        self.counters["answered"] += 1
        self.verdicts.notify(uri, request_id, job.mode, known, fresh)
        if fresh and known is not None:
            # the server's own cost around an engine run (JSON and stdio excluded): cctest/stats
            spent = (time.perf_counter() - t0) * 1000
            self.numbers.serve_overhead(spent - known.timings_ms["total"])
        return Served(request_id=request_id, uri=uri, job=job, result=known, doc=doc, version=version)

    async def _join(self, uri: str, prompt: Prompt, settings: Settings, request_id: str) -> JobResult | None:
        """The job for this prompt: joined, or started (None: superseded, or it failed)."""
        start = functools.partial(self.runner.run, uri, prompt, settings, request_id)
        try:
            return await self.jobs.run(uri, cache_key(prompt, settings), start)
        except BackendError as exc:
            self.health.failed(exc)
            return None
        except Exception as exc:  # a bug in a stage: log it, answer nothing, stay up
            log.exception("serving %s failed", uri)
            self.health.failed(exc)
            return None

    async def close(self) -> None:
        """``exit``: the defect-log writes under way finish, then the backend's connections are
        closed, so the process ends with nothing left open (an http backend's connection pool left
        to the garbage collector logged "Unclosed client session" at every exit). After ``shutdown``
        the requests under way were cancelled; a background check still running is waited for
        within the backend's timeout."""
        await self.background.drain_writes()
        await self.backends.aclose()

    # -- stats ---------------------------------------------------------------------------------
    async def stats(self) -> dict[str, Any]:
        """``cctest/stats``: the counters and means, the backend, the settings and the log's numbers."""
        await self.background.drain_writes()
        return {
            **self.numbers.snapshot(),
            "backend": self.backends.describe(),
            "settings": redact_settings(wire.to_wire(self.settings)),
            "defectLog": str(self.settings.defect_log_path()),
            "log": await self.recorder.log_stats(),
        }


server = CCTestServer()


# -- lifecycle and settings ---------------------------------------------------------------------
@server.feature(lsp.INITIALIZE)
def initialize(ls: CCTestServer, params: lsp.InitializeParams) -> None:
    ls.set_init_options(params.initialization_options)


@server.feature(lsp.INITIALIZED)
def initialized(ls: CCTestServer, params: lsp.InitializedParams) -> None:
    ls.flush_warnings()
    ls.spawn(ls.warm_up())


@server.feature(lsp.EXIT)
async def exit_(ls: CCTestServer, params: None) -> None:
    await ls.close()  # before pygls ends the process


@server.feature(lsp.WORKSPACE_DID_CHANGE_CONFIGURATION)
async def did_change_configuration(ls: CCTestServer, params: lsp.DidChangeConfigurationParams) -> None:
    await ls.change_configuration(params.settings)


@server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: CCTestServer, params: lsp.DidCloseTextDocumentParams) -> None:
    ls.jobs.cancel_document(params.text_document.uri)


# -- completions --------------------------------------------------------------------------------
@server.feature(lsp.TEXT_DOCUMENT_INLINE_COMPLETION, lsp.InlineCompletionOptions())
async def inline_completion(
    ls: CCTestServer, params: lsp.InlineCompletionParams
) -> lsp.InlineCompletionList | None:
    served = await ls.serve(params.text_document.uri, params.position)
    return convert.inline_answer(served, params.position)


@server.feature(lsp.TEXT_DOCUMENT_COMPLETION, lsp.CompletionOptions(resolve_provider=False))
async def completion(ls: CCTestServer, params: lsp.CompletionParams) -> lsp.CompletionList:
    served = await ls.serve(params.text_document.uri, params.position)
    return convert.completion_answer(served, params.position)


# -- custom requests ----------------------------------------------------------------------------
@server.feature("cctest/defects")
async def defects(ls: CCTestServer, params: Any) -> dict[str, Any]:
    """Records, newest first: params ``limit`` (1-1000, default 50), ``offset``, ``uri``, ``since``."""
    query = defect_queries.list_query(params)
    records, total = await ls.recorder.records(query)
    return {"records": [convert.defect_to_wire(r) for r in records], "total": total}


@server.feature("cctest/stats")
async def stats(ls: CCTestServer, params: Any) -> dict[str, Any]:
    return await ls.stats()


# -- commands -----------------------------------------------------------------------------------
@server.command("cctest.clearDefects")
async def clear_defects(ls: CCTestServer, *args: Any) -> dict[str, Any]:
    deleted = await ls.recorder.clear()
    return {"deleted": deleted}


@server.command("cctest.exportDefects")
async def export_defects(ls: CCTestServer, *args: Any) -> dict[str, Any]:
    """Arguments: ``[path, format]`` or ``[{"path": ..., "format": "jsonl"|"csv"}]``."""
    path, fmt = defect_queries.export_target(args)
    count = await ls.recorder.export(path, fmt)
    return {"path": path, "format": fmt, "count": count}


@server.command(convert.ACCEPT_COMMAND)
async def accepted(ls: CCTestServer, *args: Any) -> dict[str, Any]:
    ident = defect_queries.accepted_argument(args)
    return await ls.recorder.accepted(ident)
