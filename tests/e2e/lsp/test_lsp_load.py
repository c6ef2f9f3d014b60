"""The acceptance path on a loaded machine: the bundled model deciding early, CPU-bound processes
beside the server. The acceptance must be in the defect log as soon as the server has answered
it, with the verdict known then, while the verdict on whole completions is still settling (which
gives way to other work and so may take long); the settled verdict then updates the same record,
which stays accepted. Every wait is for an event, under a hang guard, never a window sized for a
quiet machine."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from busy import busy_cpus
from lsp_helpers import as_dict, command, custom, inline, session

from cctest.defects import DefectRecord, DefectStore

pytestmark = [pytest.mark.timeout(900), pytest.mark.slow]

TEXT = (
    "import os\n\n\ndef count_lines(path):\n    total = 0\n    for name in os.listdir(path):\n"
    "        total += 1\n    return total\n\n\n"
    "def largest(paths):\n    best = None\n    for p in paths:\n        \n"
)
LINE, COL = 13, 8  # the indented empty line in the loop
# decide after 4 tokens of at most 24: the answer comes while the cut completions still run on
SETTINGS = {
    "backend": "hf",
    "device": "cpu",
    "threads": 1,
    "mutants": 6,
    "maxNewTokens": 24,
    "decideAfter": 4,
    "logAll": True,
    "timeout": 600,
}
BUSY = 3  # CPU-bound processes beside the server (the machine has 2 cores)
HANG_GUARD_S = 600  # only against a hang: the events themselves are awaited


def _record(log: Path, request_id: str) -> DefectRecord | None:
    """The record of ``request_id`` as the file holds it now (read apart from the server)."""
    with DefectStore(log, create=False) as store:
        return store.get_by_request(request_id)


def _cut(record: DefectRecord) -> bool:
    """The record holds the early verdict: some completions were cut at the decision."""
    return any(c.get("cut") for c in record.completions)


async def _verdicts_for(client: Any, request_id: str, n: int) -> list[Any]:
    """Wait until ``n`` cctest/verdict notifications for ``request_id`` have come."""
    while len(mine := [v for v in client.verdicts if v.requestId == request_id]) < n:
        await asyncio.sleep(0.05)
    return mine


async def test_an_acceptance_is_logged_before_the_verdict_settles_on_a_loaded_machine(tmp_path: Path) -> None:
    log = tmp_path / "defects.sqlite3"
    with busy_cpus(BUSY) as procs:
        async with session({**SETTINGS, "defectLog": str(log)}, tmp_path, open_source=TEXT) as client:
            answer = await asyncio.wait_for(inline(client, LINE, COL), HANG_GUARD_S)
            [item] = answer.items
            assert item.command is not None and item.command.command == "cctest.accepted"
            [request_id] = item.command.arguments
            [early] = await asyncio.wait_for(_verdicts_for(client, request_id, 1), HANG_GUARD_S)

            # the user takes it: the editor runs the item's command
            accepted = as_dict(
                await asyncio.wait_for(command(client, "cctest.accepted", request_id), HANG_GUARD_S)
            )
            # handled, and the settling not finished: its verdict has not been sent yet ...
            assert [v.requestId for v in client.verdicts].count(request_id) == 1
            # ... yet the acceptance is in the log already, on the record with the early verdict
            record = _record(log, request_id)
            assert record is not None and record.id == accepted["record"]
            assert record.accepted is True and record.accepted_time is not None
            assert _cut(record) and "settle" not in record.timings
            assert record.suspect is early.suspect

            # the settled verdict comes (its notification is sent once its write is under way)
            [_, settled] = await asyncio.wait_for(_verdicts_for(client, request_id, 2), HANG_GUARD_S)
            defects = as_dict(await asyncio.wait_for(custom(client, "cctest/defects", {}), HANG_GUARD_S))
        assert all(p.poll() is None for p in procs)  # the load was there throughout

    assert [r["id"] for r in defects["records"]] == [record.id]
    after = _record(log, request_id)
    assert after is not None and after.id == record.id
    assert not _cut(after) and "settle" in after.timings  # the same record, the settled verdict
    assert after.suspect is settled.suspect and len(after.outliers) == settled.outliers
    assert after.accepted is True and after.accepted_time == record.accepted_time  # still accepted
    assert after.chosen_completion == record.chosen_completion  # the answer stays the answered one
    with DefectStore(log, create=False) as store:
        stats = store.stats()
    assert stats["acceptances"] == 1 and stats["accepted_records"] == 1
    assert stats["acceptances_suspect"] == int(after.suspect)
