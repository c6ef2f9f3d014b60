"""Unit tests for lsp_server.defect_recorder with plain inputs and a real DefectStore."""

from __future__ import annotations

import asyncio
import dataclasses
import sqlite3
from collections import Counter
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcInvalidParams

from cctest.cache import LRU
from cctest.config import Settings
from cctest.types import Completion, EngineResult, Mutant, Prompt, Verdict
from lsp_server.defect_recorder import DefectRecorder, Ticket


def _result(suspect: bool) -> EngineResult:
    """The original completion is an outlier (suspect) or agrees with its mutants' completions."""
    original = "    return a * 2\n" if suspect else "    return a + b\n"
    return EngineResult(
        prompt=Prompt(text="def add(a, b):\n", suffix="", line=2, col=1),
        mutants=(Mutant("rename", "def add(x, b):\n", {"x": "a"}),),
        dropped_mutants=(),
        completions=(
            Completion("original", original, original),
            Completion("mutant:1:rename", "    return x + b\n", "    return a + b\n"),
        ),
        similarity=((1.0, 0.6), (0.6, 1.0)),
        verdict=Verdict(
            outliers=(0,) if suspect else (),
            chosen=1,
            no_results=(),
            counts=(1, 0) if suspect else (0, 0),
            threshold=1.6,
        ),
        timings_ms={"total": 1.0},
    )


class _Harness:
    """A recorder on a log in ``directory``, with the server's spawn/drain done by hand."""

    def __init__(self, log_path: Path) -> None:
        self.settings = Settings(defect_log=str(log_path))
        self.counters: Counter[str] = Counter()
        self.messages: list[str] = []
        self.served: LRU[str, tuple[str, Ticket]] = LRU(16)
        self.writes: set[asyncio.Task[Any]] = set()
        self.recorder = DefectRecorder(
            lambda: self.settings,
            self.spawn,
            self.drain,
            self.counters,
            lambda message, kind: self.messages.append(message),
            lambda: None,
            self.served,
        )

    def spawn(self, coro: Coroutine[Any, Any, Any], *, write: bool = False) -> asyncio.Task[Any]:
        task = asyncio.ensure_future(coro)
        if write:
            self.writes.add(task)
        return task

    async def drain(self) -> None:
        await asyncio.gather(*self.writes)


def test_a_suspect_answer_is_recorded_and_its_acceptance_found_by_request_id(tmp_path: Path) -> None:
    h = _Harness(tmp_path / "defects.db")

    async def scenario() -> dict[str, Any]:
        ticket = Ticket()
        h.recorder.maybe_record(_result(True), ticket, "repair", "req-1", "file:///a.py", h.settings)
        h.served.put("req-1", ("file:///a.py", ticket))
        answer = await h.recorder.accepted("req-1")
        assert ticket.suspect and ticket.repaired and ticket.record_id == answer["record"]
        return answer

    answer = asyncio.run(scenario())
    record = asyncio.run(h.recorder.open_store()).get(answer["record"])
    assert record is not None and record.request_id == "req-1" and record.line == 1
    assert h.counters["suspect"] == 1 and h.counters["recorded"] == 1 and h.counters["accepted"] == 1


def test_a_clean_answer_is_written_only_with_log_all(tmp_path: Path) -> None:
    h = _Harness(tmp_path / "defects.db")

    async def scenario() -> None:
        h.recorder.maybe_record(_result(False), Ticket(), "repair", "r1", "file:///a.py", h.settings)
        h.settings = Settings(defect_log=h.settings.defect_log, log_all=True)
        h.recorder.maybe_record(_result(False), Ticket(), "repair", "r2", "file:///a.py", h.settings)
        h.recorder.maybe_record(None, Ticket(), "monitor", "r3", "file:///a.py", h.settings)
        await h.drain()

    asyncio.run(scenario())
    assert h.counters["suspect"] == 0 and h.counters["recorded"] == 1
    records, total = asyncio.run(h.recorder.open_store()).list(limit=10)
    assert total == 1 and records[0].request_id == "r2"


def _acceptances(log: Path) -> list[tuple[Any, ...]]:
    with sqlite3.connect(log) as db:
        return db.execute("SELECT request_id, time, suspect, repaired, defect_id FROM acceptances").fetchall()


def test_an_acceptance_is_stored_with_the_early_verdict_and_takes_the_settled_one(tmp_path: Path) -> None:
    """Repair mode deciding early: the acceptance is stored at once with the verdict known then;
    the settled verdict, when it comes, replaces the record's and the acceptance's, which stays."""
    h = _Harness(tmp_path / "defects.db")

    async def scenario() -> dict[str, Any]:
        ticket = Ticket()
        h.recorder.maybe_record(_result(True), ticket, "repair", "req-1", "file:///a.py", h.settings)
        h.served.put("req-1", ("file:///a.py", ticket))
        answer = await h.recorder.accepted("req-1")  # no settled verdict yet: it does not wait for one
        early = (await h.recorder.open_store()).get(answer["record"])
        assert early is not None and early.accepted and early.suspect
        assert _acceptances(tmp_path / "defects.db")[0][2:] == (1, 1, answer["record"])
        h.recorder.settled(_result(False), ticket, "repair", "req-1", "file:///a.py", h.settings)
        await h.drain()
        return answer

    answer = asyncio.run(scenario())
    store = asyncio.run(h.recorder.open_store())
    [record], total = store.list(limit=10)
    assert total == 1 and record.id == answer["record"] and record.request_id == "req-1"
    assert not record.suspect and record.outliers == [] and record.accepted  # settled, still accepted
    [(request_id, when, suspect, repaired, defect_id)] = _acceptances(tmp_path / "defects.db")
    assert (request_id, suspect, repaired, defect_id) == ("req-1", 0, 0, record.id)
    assert record.accepted_time == when
    assert h.counters["suspect"] == 0 and h.counters["recorded"] == 1 and h.counters["accepted"] == 1


@pytest.mark.parametrize("settles_suspect", [True, False])
def test_an_answer_accepted_before_it_was_recorded_gets_its_settled_verdict(
    tmp_path: Path, settles_suspect: bool
) -> None:
    """An early verdict not worth a record, accepted (by a request that joined it): a suspect
    settled verdict is recorded as accepted and linked to the acceptance; a clean one updates the
    acceptance alone."""
    h = _Harness(tmp_path / "defects.db")

    async def scenario() -> None:
        ticket = Ticket()
        h.recorder.maybe_record(_result(False), ticket, "repair", "req-1", "file:///a.py", h.settings)
        h.served.put("req-2", ("file:///a.py", ticket))
        assert await h.recorder.accepted("req-2") == {"accepted": True, "record": None}
        settled = _result(True)
        if not settles_suspect:  # clean, but the answer differs from the whole original completion
            settled = dataclasses.replace(settled, verdict=_result(False).verdict)
        h.recorder.settled(settled, ticket, "repair", "req-1", "file:///a.py", h.settings)
        await h.drain()

    asyncio.run(scenario())
    records, _ = asyncio.run(h.recorder.open_store()).list(limit=10)
    [(request_id, when, suspect, repaired, defect_id)] = _acceptances(tmp_path / "defects.db")
    assert (request_id, suspect, repaired) == ("req-2", int(settles_suspect), 1)
    if settles_suspect:
        [record] = records
        assert record.request_id == "req-1" and record.suspect and record.accepted
        assert defect_id == record.id and record.accepted_time == when
    else:
        assert records == [] and defect_id is None


def test_monitor_mode_an_answer_accepted_before_its_check_is_linked_to_the_record_the_check_writes(
    tmp_path: Path,
) -> None:
    h = _Harness(tmp_path / "defects.db")

    async def scenario() -> None:
        ticket = Ticket()  # monitor mode: answered before the check, no verdict yet
        h.served.put("req-1", ("file:///a.py", ticket))
        assert await h.recorder.accepted("req-1") == {"accepted": True, "record": None}
        h.recorder.maybe_record(_result(True), ticket, "monitor", "req-1", "file:///a.py", h.settings)
        await h.drain()

    asyncio.run(scenario())
    [record], _ = asyncio.run(h.recorder.open_store()).list(limit=10)
    [(request_id, when, suspect, repaired, defect_id)] = _acceptances(tmp_path / "defects.db")
    assert record.accepted and record.accepted_time == when and defect_id == record.id
    assert (request_id, suspect, repaired) == ("req-1", 1, 1)


def test_a_settled_verdict_after_the_log_path_changed_leaves_the_new_logs_records_alone(
    tmp_path: Path,
) -> None:
    h = _Harness(tmp_path / "a.db")

    async def scenario() -> None:
        ticket = Ticket()
        h.recorder.maybe_record(_result(True), ticket, "repair", "req-1", "file:///a.py", h.settings)
        await h.drain()
        h.settings = Settings(defect_log=str(tmp_path / "b.db"))
        h.recorder.reopen()
        other = Ticket()  # the new log's record 1: another request's
        h.recorder.maybe_record(_result(True), other, "repair", "req-2", "file:///b.py", h.settings)
        await h.drain()
        assert ticket.record_id == other.record_id == 1
        h.recorder.settled(_result(False), ticket, "repair", "req-1", "file:///a.py", h.settings)
        await h.drain()

    asyncio.run(scenario())
    [record], _ = asyncio.run(h.recorder.open_store()).list(limit=10)
    assert record.request_id == "req-2" and record.suspect  # untouched: req-1's record is in a.db


def test_acceptance_by_record_id_and_bad_identifiers(tmp_path: Path) -> None:
    h = _Harness(tmp_path / "defects.db")
    with pytest.raises(JsonRpcInvalidParams):
        asyncio.run(h.recorder.accepted(7))  # no such record
    with pytest.raises(JsonRpcInvalidParams):
        asyncio.run(h.recorder.accepted(True))
    assert asyncio.run(h.recorder.accepted("forgotten")) == {"accepted": True, "record": None}
    assert h.counters["accepted_unknown"] == 1


def test_an_unopenable_log_is_reported_once_and_the_path_change_reopens(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory", encoding="utf-8")
    h = _Harness(blocker / "defects.db")
    assert asyncio.run(h.recorder.store()) is None and asyncio.run(h.recorder.store()) is None
    assert len(h.messages) == 1 and "will not be recorded" in h.messages[0]
    with pytest.raises(JsonRpcInvalidParams, match="unavailable"):
        asyncio.run(h.recorder.open_store())
    h.settings = Settings(defect_log=str(tmp_path / "ok.db"))
    h.recorder.reopen()
    assert asyncio.run(h.recorder.store()) is not None
