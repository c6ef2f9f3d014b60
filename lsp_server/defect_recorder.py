"""The server's defect recorder: opens the defect log, writes suspect answers to it, stores acceptances.

``DefectRecorder`` opens the log lazily, in a worker thread, at the path the current settings name
(once a path failed, it says so once and records nothing until the path changes; a log another
process held locked past the wait is tried again at the next record), writes records in a worker
thread after the answer is sent (``maybe_record``), replaces a record's verdict with a later one
(``settled``), stores acceptances (``accepted``), and answers the requests that read or change the
log (``records``, ``export``, ``clear``) once the writes already under way are done. Each answer's
``Ticket`` remembers what an acceptance needs about it, and chains the writes of its record, so
they happen in the order they were asked for: an acceptance waits for the record's write under way
(a moment), never for a verdict still being computed.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcInvalidParams

from cctest.backends.base import Backend
from cctest.cache import LRU
from cctest.config import Settings
from cctest.defects import DefectRecord, DefectStore
from cctest.errors import DefectLogBusy, DefectLogError
from cctest.types import EngineResult

from . import defect_queries
from .background import Spawn


@dataclasses.dataclass(slots=True)
class Ticket:
    """What an acceptance needs to know about an answer; small, so thousands are kept
    (an EngineResult, with its mutants and completions, is tens of kilobytes: only the cache
    keeps those)."""

    suspect: bool = False
    repaired: bool = False
    record: asyncio.Task[int | None] | None = None  # the last write of its record while it runs
    record_id: int | None = None  # its record, once written (the finished task is let go)
    log: DefectStore | None = None  # the log that record is in
    accepted: list[str] = dataclasses.field(default_factory=list)  # request ids accepted with it

    def written(self, task: asyncio.Task[int | None]) -> None:
        if not task.cancelled() and task.exception() is None:
            self.record_id = task.result()
        if self.record is task:
            self.record = None

    async def record_of(self) -> int | None:
        """The id of this answer's defect record, once the write under way is done (None: not
        recorded)."""
        if self.record is not None:
            # shielded: an acceptance request cancelled by its client must not cancel the write
            return await asyncio.shield(self.record)
        return self.record_id


class DefectRecorder:
    """The defect log of one server: where suspect answers and acceptances are written."""

    def __init__(
        self,
        settings: Callable[[], Settings],
        spawn: Spawn,
        drain: Callable[[], Awaitable[None]],
        counters: Counter[str],
        report: Callable[[str, lsp.MessageType], None],
        backend: Callable[[], Backend | None],
        served: LRU[str, tuple[str, Ticket]],
    ) -> None:
        self._settings = settings
        self._spawn = spawn  # spawn(coro, write=True): a write that drain() waits for
        self._drain = drain
        self.counters = counters
        self._report = report  # a message for the user (window/logMessage)
        self._backend = backend
        self._served = served  # request id -> (uri, ticket)
        self._store: DefectStore | None = None
        self._store_error: str | None = None  # why the path cannot be used, until it changes
        self._busy: str | None = None  # why the last opening failed when the log was only busy
        self._opening = asyncio.Lock()
        self._path_changes = 0

    async def store(self) -> DefectStore | None:
        """The open log (opened now, in a worker thread, if need be); None when it cannot be opened.

        A path that cannot be used is said once, and not tried again until the path changes. A log
        another process held locked past the wait (``DefectLogBusy``) is a passing state: said once,
        and tried again at the next use, so the server records again once the lock is gone."""
        async with self._opening:
            while self._store is None and self._store_error is None:
                changes = self._path_changes
                try:
                    store = await asyncio.to_thread(DefectStore, self._settings().defect_log_path())
                except DefectLogBusy as exc:
                    if self._busy is None:
                        self._report(
                            f"cctest: defects are not recorded while another process holds the log: {exc}",
                            lsp.MessageType.Warning,
                        )
                    self._busy = str(exc)
                    return None
                except DefectLogError as exc:
                    self._busy = None
                    if changes == self._path_changes:
                        self._store_error = str(exc)
                        self._report(f"cctest: defects will not be recorded: {exc}", lsp.MessageType.Error)
                    continue  # (the path changed meanwhile: the new one is opened instead)
                if changes != self._path_changes:  # the path changed while it was opened
                    await asyncio.to_thread(store.close)
                    continue
                if self._busy is not None:
                    self._report(
                        "cctest: the defect log is free again; defects are recorded.", lsp.MessageType.Info
                    )
                self._store, self._busy = store, None
            return self._store

    async def open_store(self) -> DefectStore:
        """The open log, for a request that needs it: InvalidParams when it is unavailable."""
        store = await self.store()
        if store is None:
            why = self._store_error or self._busy
            raise JsonRpcInvalidParams(message=f"the defect log is unavailable: {why}")
        return store

    def reopen(self) -> None:
        """The log's path changed: close the old log (after its writes) and open the new one lazily."""
        if self._store is not None:
            self._spawn(self._close(self._store))  # after the writes already under way
        self._store = None
        self._store_error = None
        self._busy = None
        self._path_changes += 1

    async def _close(self, store: DefectStore) -> None:
        await self._drain()
        await asyncio.to_thread(store.close)

    def maybe_record(
        self,
        result: EngineResult | None,
        ticket: Ticket,
        mode: str,
        request_id: str,
        uri: str,
        settings: Settings,
    ) -> None:
        """Note the verdict on ``ticket``; write a record (in a worker thread) when it is suspect or
        ``logAll`` is on."""
        if result is None:
            return
        self._note(result, ticket)
        if result.is_suspect:
            self.counters["suspect"] += 1
        if result.is_suspect or settings.log_all:
            self._chain(ticket, lambda _: self._record(result, request_id, uri, settings, mode, ticket))

    def settled(
        self,
        result: EngineResult,
        ticket: Ticket,
        mode: str,
        request_id: str,
        uri: str,
        settings: Settings,
    ) -> None:
        """A later verdict on an answer whose early one ``maybe_record`` had: its record (if one was
        written) now holds this one, acceptances kept; without one, it is written now when this
        verdict is suspect (or ``logAll``), linked to the acceptances already stored."""
        was = ticket.suspect
        self._note(result, ticket)
        self.counters["suspect"] += int(result.is_suspect) - int(was)  # each answer counted once
        log_it = result.is_suspect or settings.log_all

        async def write(record_id: int | None) -> int | None:
            if record_id is None and log_it:
                return await self._record(result, request_id, uri, settings, mode, ticket)
            store = await self.store()
            if store is None or (record_id is None and not ticket.accepted):
                return record_id
            try:
                await asyncio.to_thread(store.settle, record_id, result, accepted=list(ticket.accepted))
            except DefectLogError as exc:
                self._report(f"cctest: a verdict could not be recorded: {exc}", lsp.MessageType.Error)
            return record_id

        self._chain(ticket, write)

    @staticmethod
    def _note(result: EngineResult, ticket: Ticket) -> None:
        ticket.suspect = result.is_suspect
        ticket.repaired = result.completion != result.original_completion

    def _chain(
        self, ticket: Ticket, write: Callable[[int | None], Awaitable[int | None]]
    ) -> asyncio.Task[int | None]:
        """Run ``write(record id)`` once the ticket's write under way is done (a write task that
        ``drain`` waits for); it returns the record's id."""
        previous = ticket.record

        async def chained() -> int | None:
            if previous is not None:  # whatever it raised (it said so), or if it was cancelled
                await asyncio.wait([previous])
                ticket.written(previous)  # its record's id, whether or not its callback ran yet
            # a record in a log no longer in use (its path changed) is none of this log's
            return await write(ticket.record_id if ticket.log is self._store else None)

        task: asyncio.Task[int | None] = self._spawn(chained(), write=True)
        ticket.record = task
        task.add_done_callback(ticket.written)
        return task

    async def _record(
        self, result: EngineResult, request_id: str, uri: str, settings: Settings, mode: str, ticket: Ticket
    ) -> int | None:
        store = await self.store()
        if store is None:
            return None
        backend = self._backend()
        try:
            record_id = await asyncio.to_thread(
                store.add,
                result,
                request_id=request_id,
                uri=uri,
                line=None if result.prompt.line is None else result.prompt.line - 1,
                col=None if result.prompt.col is None else result.prompt.col - 1,
                mode=mode,
                model=backend.describe() if backend is not None else settings.backend,
                settings=settings.to_dict(),
                accepted=list(ticket.accepted),
            )
        except DefectLogError as exc:
            self._report(f"cctest: a defect could not be recorded: {exc}", lsp.MessageType.Error)
            return None
        self.counters["recorded"] += 1
        ticket.log = store
        return record_id

    async def records(self, query: dict[str, Any]) -> tuple[list[DefectRecord], int]:
        """``cctest/defects``: the records a ``defect_queries.list_query`` asks for, after the writes
        already under way."""
        await self._drain()
        return await defect_queries.list_records(await self.open_store(), query)

    async def export(self, path: str, fmt: str) -> int:
        """``cctest.exportDefects``: the whole log written to ``path``; the number of records."""
        await self._drain()
        return await defect_queries.export(await self.open_store(), path, fmt)

    async def clear(self) -> int:
        """``cctest.clearDefects``: delete every record; how many there were."""
        await self._drain()
        return await asyncio.to_thread((await self.open_store()).clear)

    async def log_stats(self) -> dict[str, Any] | None:
        """The log's own numbers for ``cctest/stats`` (None: no log; an error: its message)."""
        store = await self.store()
        try:
            return await asyncio.to_thread(store.stats) if store is not None else None
        except DefectLogError as exc:
            return {"error": str(exc)}

    async def accepted(self, ident: Any) -> dict[str, Any]:
        """Store that the user accepted a completion (by request id, or by defect record id)."""
        store = await self.open_store()
        if isinstance(ident, str) and (entry := self._served.get(ident)) is not None:
            uri, ticket = entry
            if ident not in ticket.accepted:
                ticket.accepted.append(ident)  # a verdict that comes later updates this acceptance

            async def mark(record_id: int | None) -> int | None:
                # with the verdict known now; after the record's write under way, never after a
                # verdict still being computed (that one updates the acceptance when it comes)
                ticket.log = store
                return await asyncio.to_thread(
                    store.mark_accepted,
                    ident,
                    uri=uri,
                    suspect=ticket.suspect,
                    repaired=ticket.repaired,
                    defect_id=record_id,
                )

            # shielded: the acceptance is stored even if its request is cancelled meanwhile
            record_id = await asyncio.shield(self._chain(ticket, mark))
        elif isinstance(ident, int) and not isinstance(ident, bool):
            if await asyncio.to_thread(store.get, ident) is None:
                raise JsonRpcInvalidParams(message=f"there is no defect record {ident}.")
            record_id = await asyncio.to_thread(store.mark_accepted, f"record:{ident}", defect_id=ident)
        elif isinstance(ident, str):
            # a request this server no longer remembers (or a restarted one): the log may have it
            record_id = await asyncio.to_thread(store.mark_accepted, ident)
            if record_id is None:
                self.counters["accepted_unknown"] += 1
        else:
            raise JsonRpcInvalidParams(
                message="cctest.accepted takes a request id (string) or a record id (integer)."
            )
        self.counters["accepted"] += 1
        return {"accepted": True, "record": record_id}
