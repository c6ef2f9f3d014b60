"""The job runner alone: the rule backend (and a gated fake one) behind a real BackendHolder, a real
DefectStore, the verdicts collected instead of sent."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from cctest.backends.base import Backend, Outcome
from cctest.backends.rules import RuleBackend
from cctest.cache import LRU
from cctest.config import Settings
from cctest.engine import Engine
from cctest.errors import BackendError, BackendTimeout
from cctest.types import Prompt
from lsp_server.backends import BackendHolder
from lsp_server.background import BackgroundTasks
from lsp_server.defect_recorder import DefectRecorder
from lsp_server.health import BackendHealth
from lsp_server.runner import MAX_BACKGROUND, JobRunner, cache_key
from lsp_server.stats import Stats
from lsp_server.verdicts import VerdictNotifier

# the rule backend answers oddly when the prompt holds these words; REL mutants rename acc and tax
FRAGILE = "fragile=acc = amount\n    tax"
FRAGILE_TEXT = "def total(amount, rate):\n    acc = amount\n    tax = rate\n    "
PLAIN_TEXT = "def add(a, b):\n    "


class GatedBackend(Backend):
    """Answers ``return 1``: a batch (the engine's mutants) once ``gate`` is set, a single prompt (a
    plain completion) at once unless ``hold_all``; counts the calls it was asked."""

    name = "gated"

    def __init__(self, hold_all: bool = False) -> None:
        self.gate = asyncio.Event()
        self.hold_all = hold_all
        self.calls = 0

    async def complete(
        self, prompts: Sequence[str], *, suffixes: Sequence[str] | None = None
    ) -> list[Outcome]:
        self.calls += 1
        if self.hold_all or len(prompts) > 1:
            await self.gate.wait()
        return ["return 1\n" for _ in prompts]

    def describe(self) -> str:
        return "gated"


class Harness:
    def __init__(self, tmp_path: Path, backend: Backend | None = None, **settings: Any) -> None:
        settings.setdefault("schemes", ("REL_R", "REL_C"))
        self.settings = Settings(backend="rules", defect_log=str(tmp_path / "d.sqlite3"), **settings)
        self.stats = Stats()
        self.messages: list[str] = []
        self.verdicts: list[dict[str, Any]] = []
        self.background = BackgroundTasks()
        self.cache: LRU[Any, Any] = LRU(16)
        build = (lambda s: backend) if backend is not None else (lambda s: RuleBackend.from_spec(s.model))
        self.backends = BackendHolder(
            lambda: self.settings, self.background.spawn, self.stats.counters, build=build
        )
        self.health = BackendHealth(
            self.stats.counters, lambda m, kind: self.messages.append(m), lambda: "rules"
        )
        self.recorder = DefectRecorder(
            lambda: self.settings,
            self.background.spawn,
            self.background.drain_writes,
            self.stats.counters,
            lambda m, kind: self.messages.append(m),
            lambda: self.backends.current,
            LRU(16),
        )
        self.runner = JobRunner(
            self.backends,
            self.health,
            self.cache,
            self.stats,
            self.recorder,
            VerdictNotifier(lambda method, params: self.verdicts.append(params)),
            self.background.spawn,
        )

    async def settle(self) -> None:
        """Let background checks, verdicts and writes finish."""
        for _ in range(200):
            await asyncio.sleep(0.01)
            if not len(self.background):
                break
        await self.background.drain_writes()
        await asyncio.sleep(0)


def _prompt(text: str) -> Prompt:
    return Prompt(text=text, suffix="", line=text.count("\n") + 1, col=len(text.rsplit("\n", 1)[-1]) + 1)


async def test_repair_runs_the_engine_caches_and_records_nothing_when_not_suspect(tmp_path: Path) -> None:
    h = Harness(tmp_path, mutants=4)
    prompt = _prompt(PLAIN_TEXT)
    job = await h.runner.run("file:///a.py", prompt, h.settings, "r1")
    assert job.mode == "repair" and job.completion == "return a + b\n"
    assert job.result is not None and not job.result.is_suspect
    assert h.cache.get(cache_key(prompt, h.settings)) is job
    await h.settle()
    assert h.stats.counters["engine_runs"] == 1 and h.stats.counters["recorded"] == 0
    assert h.verdicts == []  # a repair job's verdict is the request's to send, not the runner's


async def test_repair_records_a_suspect_answer(tmp_path: Path) -> None:
    h = Harness(tmp_path, model=FRAGILE, mutants=6)
    job = await h.runner.run("file:///t.py", _prompt(FRAGILE_TEXT), h.settings, "r2")
    assert job.completion == "return amount + rate\n"  # repaired from the mutants
    await h.settle()
    assert job.ticket.suspect and job.ticket.repaired and job.ticket.record_id is not None
    [record], total = await h.recorder.records({"limit": 10, "offset": 0, "uri": None, "since": None})
    assert total == 1 and record.request_id == "r2" and record.mode == "repair"


async def test_monitor_answers_at_once_then_checks_records_and_notifies(tmp_path: Path) -> None:
    h = Harness(tmp_path, model=FRAGILE, mutants=6, mode="monitor")
    job = await h.runner.run("file:///t.py", _prompt(FRAGILE_TEXT), h.settings, "r3")
    assert job.mode == "monitor" and job.result is None
    assert job.completion == "return rate * 2  # fragile\n"  # the model's own answer, unrepaired
    await h.settle()
    assert job.result is not None and job.result.is_suspect
    assert h.stats.counters["monitor_checks"] == 1 and h.stats.counters["recorded"] == 1
    [verdict] = h.verdicts
    assert verdict["requestId"] == "r3" and verdict["mode"] == "monitor" and verdict["suspect"] is True


async def test_monitor_checks_beyond_the_limit_are_skipped(tmp_path: Path) -> None:
    backend = GatedBackend()
    h = Harness(tmp_path, backend=backend, mode="monitor", mutants=4)
    for i in range(MAX_BACKGROUND + 1):
        text = FRAGILE_TEXT.replace("total", f"total{i}")
        job = await h.runner.run("file:///g.py", _prompt(text), h.settings, f"r{i}")
        assert job.completion == "return 1\n"  # answered while the earlier checks wait
    await asyncio.sleep(0.1)  # the checks started and wait for their batches
    assert h.runner.background_checks == MAX_BACKGROUND
    assert h.stats.counters["monitor_skipped"] == 1
    backend.gate.set()
    await h.settle()
    assert h.runner.background_checks == 0 and h.stats.counters["monitor_checks"] == MAX_BACKGROUND


async def test_a_failing_backend_raises_its_error(tmp_path: Path) -> None:
    h = Harness(tmp_path, model="fail_on=BOOM", mode="monitor")
    with pytest.raises(BackendError, match="told to fail"):
        await h.runner.run("file:///b.py", _prompt("BOOM = "), h.settings, "r9")
    assert h.cache.get(cache_key(_prompt("BOOM = "), h.settings)) is None


async def test_a_backend_past_the_deadline_is_a_timeout(tmp_path: Path) -> None:
    backend = GatedBackend(hold_all=True)  # never opened
    h = Harness(tmp_path, backend=backend, mode="monitor", timeout=0.05)
    with pytest.raises(BackendTimeout, match="no completion within 0.05 seconds"):
        await h.runner.run("file:///s.py", _prompt("y = "), h.settings, "r10")
    assert backend.calls == 1


@pytest.fixture(scope="module")
def bundled() -> Any:
    from cctest.backends.base import GenerationOptions
    from cctest.backends.hf import HFBackend

    return HFBackend(None, options=GenerationOptions(max_new_tokens=24), threads=1, boundaries=False)


SETTLING_TEXT = (
    "import os\n\n\ndef count_lines(path):\n    total = 0\n    for name in os.listdir(path):\n"
    "        total += 1\n    return total\n\n\n"
    "def largest(paths):\n    best = None\n    for p in paths:\n        "
)


async def test_repair_answers_early_then_records_and_sends_the_verdict_on_whole_completions(
    tmp_path: Path, bundled: Any
) -> None:
    """Deciding early, the answer is the early choice, recorded (logAll) at once with its early
    verdict; the verdict sent afterwards, and then in the same record, is the one on whole
    completions, as an undecided run makes it."""

    h = Harness(
        tmp_path, backend=bundled, mutants=6, decide_after=4, log_all=True, schemes=Settings().schemes
    )
    prompt = _prompt(SETTLING_TEXT)
    job = await h.runner.run("file:///s.py", prompt, h.settings, "r1")
    early = job.result
    assert early is not None and early.decided_after == 4 and not early.settled
    assert any(c.cut for c in early.completions)
    assert job.ticket.record is not None and job.settling is not None  # the early write; the settling
    early_id = await job.ticket.record_of()  # written without waiting for the settling
    assert early_id is not None
    await job.settling
    [record], total = await h.recorder.records({"limit": 10, "offset": 0, "uri": None, "since": None})
    assert record.id == early_id  # the same record, now holding the settled verdict
    whole = await Engine(bundled, h.settings.replace(decide_after=0)).run(prompt)
    settled = job.result
    assert settled is not None and settled.settled and settled.completion == job.completion
    assert [c.text for c in settled.completions] == [c.text for c in whole.completions]
    assert settled.outliers == whole.outliers
    assert total == 1 and record.request_id == "r1"
    assert [c["text"] for c in record.completions] == [c.text for c in whole.completions]
    assert not any(c.get("cut") for c in record.completions)
    assert job.ticket.record_id == record.id and job.ticket.suspect == settled.is_suspect
    assert h.stats.counters["settled"] == 1
    [verdict] = h.verdicts  # the late verdict (the answer's own is the request's to send)
    assert verdict["requestId"] == "r1" and verdict["outliers"] == len(whole.outliers)


async def test_with_settle_verdicts_off_the_early_verdict_is_recorded(tmp_path: Path, bundled: Any) -> None:
    h = Harness(
        tmp_path,
        backend=bundled,
        mutants=6,
        decide_after=4,
        log_all=True,
        settle_verdicts=False,
        schemes=Settings().schemes,
    )
    job = await h.runner.run("file:///s.py", _prompt(SETTLING_TEXT), h.settings, "r1")
    [record], _ = await h.recorder.records({"limit": 10, "offset": 0, "uri": None, "since": None})
    assert job.result is not None and not job.result.settled
    assert [c.get("cut", False) for c in record.completions] == [c.cut for c in job.result.completions]
    assert any(c.cut for c in job.result.completions)
    assert h.stats.counters["settled"] == 0 and h.stats.counters["settle_skipped"] == 0
    assert h.verdicts == []


async def test_a_later_verdict_is_sent_only_while_its_request_is_the_last_answered(tmp_path: Path) -> None:
    sent: list[dict[str, Any]] = []
    notifier = VerdictNotifier(lambda method, params: sent.append(params))
    result = await Engine(RuleBackend(), Settings(mutants=2)).run(PLAIN_TEXT)
    notifier.notify("file:///a.py", "r1", "repair", result)
    notifier.notify_later("file:///a.py", "r1", "repair", result)  # still the last answer: sent
    notifier.notify("file:///a.py", "r2", "repair", result)
    notifier.notify_later("file:///a.py", "r1", "repair", result)  # r2 was answered since: dropped
    await asyncio.sleep(0.01)
    assert [p["requestId"] for p in sent] == ["r1", "r1", "r2"]
