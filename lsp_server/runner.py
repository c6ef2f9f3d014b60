"""One completion job: the engine (``repair``), or one plain completion that is then checked in
the background (``monitor``); what it produced is a ``JobResult``, cached and shared by every
request that asked for the same prompt.

The job's deadline covers its debounce and the model call, as a safety net over the backend's
own timeout. Model work is the backend's and never blocks the event loop.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Awaitable, Hashable
from typing import TypeVar

from pygls.workspace import TextDocument

from cctest.backends.base import Backend
from cctest.cache import LRU
from cctest.config import Settings
from cctest.engine import Engine, Settling
from cctest.errors import BackendError, BackendTimeout
from cctest.types import EngineResult, Prompt

from .backends import BackendHolder
from .background import Spawn
from .defect_recorder import DefectRecorder, Ticket
from .health import BackendHealth
from .stats import Stats
from .verdicts import VerdictNotifier

log = logging.getLogger("lsp_server")

MAX_BACKGROUND = 2  # monitor-mode checks running at once; more are skipped (and counted)
# repair-mode verdicts settling at once (each holds its batch's model state); past that, a result
# is recorded with its early verdict (and counted)
MAX_SETTLING = 2

T = TypeVar("T")


@dataclasses.dataclass
class JobResult:
    """What one completion job produced; shared by every request that asked for the same prompt."""

    completion: str
    result: EngineResult | None  # None in monitor mode until the background check is done
    mode: str
    ticket: Ticket = dataclasses.field(default_factory=Ticket)
    settling: asyncio.Task[None] | None = None  # repair mode: the verdict settling after the answer


@dataclasses.dataclass
class Served:
    """One answered request, while its handler converts it."""

    request_id: str
    uri: str
    job: JobResult
    result: EngineResult | None  # the verdict known when the answer was sent (monitor: maybe none yet)
    doc: TextDocument
    version: int | None  # the document's version when the request came

    @property
    def current(self) -> bool:
        """False when the document changed while the job ran (its positions moved)."""
        return self.doc.version == self.version


def cache_key(prompt: Prompt, settings: Settings) -> Hashable:
    """What a job computes: the same key gives the same answer."""
    return (prompt.text, prompt.suffix, settings)


class JobRunner:
    """Runs completion jobs with the backend of ``backends``; puts what they produce in ``cache``,
    engine timings in ``stats``, suspect results in ``recorder``, late verdicts in ``verdicts``."""

    def __init__(
        self,
        backends: BackendHolder,
        health: BackendHealth,
        cache: LRU[Hashable, JobResult],
        stats: Stats,
        recorder: DefectRecorder,
        verdicts: VerdictNotifier,
        spawn: Spawn,
    ) -> None:
        self.backends = backends
        self.health = health
        self.cache = cache
        self.stats = stats
        self.recorder = recorder
        self.verdicts = verdicts
        self.spawn = spawn
        self.background_checks = 0
        self.settling = 0

    async def run(self, uri: str, prompt: Prompt, settings: Settings, request_id: str) -> JobResult:
        """The job for ``prompt``; raises BackendError (BackendTimeout past the deadline)."""
        backend = await self.backends.get()  # a model load is not the request's: it has its own life
        seconds = settings.debounce_ms / 1000 + settings.timeout + 1
        if settings.mode == "monitor":
            first = await _within(seconds, settings, _plain_completion(backend, prompt, settings))
            self.health.ok()
            job = JobResult(completion=first, result=None, mode="monitor")
            self.cache.put(cache_key(prompt, settings), job)
            self._check_in_background(job, prompt, settings, uri, request_id, backend)
            return job
        result, settling = await _within(seconds, settings, _repaired(backend, prompt, settings))
        self.health.ok()
        self.stats.engine_run(result)
        job = JobResult(completion=result.completion, result=result, mode="repair")
        self.cache.put(cache_key(prompt, settings), job)
        # the early verdict is recorded at once (an acceptance never waits for the settling, and
        # nothing is lost if the server stops before it); the settled one replaces it when it comes
        self.recorder.maybe_record(result, job.ticket, job.mode, request_id, uri, settings)
        if settling is not None and settings.settle_verdicts and self.settling < MAX_SETTLING:
            self.settling += 1
            # not a log write: reads of the log, and acceptances, do not wait for the model
            job.settling = self.spawn(self._settle(job, settling, settings, uri, request_id))
            return job
        if settling is not None:
            settling.close()
            if settings.settle_verdicts:
                self.stats.counters["settle_skipped"] += 1
        return job

    async def _settle(
        self, job: JobResult, settling: Settling, settings: Settings, uri: str, request_id: str
    ) -> None:
        """Repair mode decided early: the cut completions run on (giving the model up to every
        request that comes meanwhile); the verdict on whole completions replaces the early one in
        the defect log (acceptances kept) and is sent. If that fails, the early verdict stands."""
        try:
            settled = await settling.result()
        except Exception as exc:  # the model failed (out of memory): the early verdict stands
            log.info("settling the verdict for %s failed: %s", uri, exc)
            self.stats.counters["settle_failed"] += 1
            return
        finally:
            self.settling -= 1
        if settled is None:
            return
        self.stats.counters["settled"] += 1
        job.result = settled
        # the write is under way (cctest/defects waits for it) before the client hears the verdict
        self.recorder.settled(settled, job.ticket, job.mode, request_id, uri, settings)
        self.verdicts.notify_later(uri, request_id, job.mode, settled)

    def _check_in_background(
        self, job: JobResult, prompt: Prompt, settings: Settings, uri: str, request_id: str, backend: Backend
    ) -> None:
        if self.background_checks >= MAX_BACKGROUND:
            self.stats.counters["monitor_skipped"] += 1
            return
        self.background_checks += 1
        self.spawn(self._check(job, prompt, settings, uri, request_id, backend))

    async def _check(
        self, job: JobResult, prompt: Prompt, settings: Settings, uri: str, request_id: str, backend: Backend
    ) -> None:
        """Monitor mode: run the engine on the answer already given; record and notify its verdict."""
        try:
            result = await Engine(backend, settings).run(prompt, original=job.completion)
        except Exception as exc:
            log.info("monitor check of %s failed: %s", uri, exc)
            self.stats.counters["monitor_failed"] += 1
            return
        finally:
            self.background_checks -= 1
        self.stats.counters["monitor_checks"] += 1
        self.stats.engine_run(result)
        job.result = result
        self.recorder.maybe_record(result, job.ticket, job.mode, request_id, uri, settings)
        self.verdicts.notify_later(uri, request_id, job.mode, result)


async def _plain_completion(backend: Backend, prompt: Prompt, settings: Settings) -> str:
    if settings.debounce_ms:
        await asyncio.sleep(settings.debounce_ms / 1000)  # a newer request cancels us here
    [first] = await backend.complete([prompt.text], suffixes=[prompt.suffix])
    if isinstance(first, BackendError):
        raise first
    return first


async def _repaired(
    backend: Backend, prompt: Prompt, settings: Settings
) -> tuple[EngineResult, Settling | None]:
    if settings.debounce_ms:
        await asyncio.sleep(settings.debounce_ms / 1000)  # a newer request cancels us here
    return await Engine(backend, settings).run_settling(prompt)


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


__all__ = ["MAX_BACKGROUND", "JobResult", "JobRunner", "Served", "cache_key"]
