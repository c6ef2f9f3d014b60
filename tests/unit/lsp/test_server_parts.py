"""The server's smallest parts alone: background tasks, backend health messages, verdict notifications."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

from lsprotocol import types as lsp

from cctest.errors import BackendError
from cctest.types import Completion, EngineResult, Prompt, Verdict
from lsp_server.background import BackgroundTasks
from lsp_server.health import BackendHealth
from lsp_server.verdicts import VERDICT_NOTIFICATION, VerdictNotifier, verdict_params


async def test_background_keeps_tasks_and_drains_only_writes() -> None:
    tasks = BackgroundTasks()
    check_gate, write_gate = asyncio.Event(), asyncio.Event()
    check = tasks.spawn(check_gate.wait())
    write = tasks.spawn(write_gate.wait(), write=True)
    assert len(tasks) == 2
    drained = asyncio.ensure_future(tasks.drain_writes())
    await asyncio.sleep(0.01)
    assert not drained.done()  # the write still runs
    write_gate.set()
    await asyncio.wait_for(drained, 5)  # the check does not hold the drain up
    assert write.done() and not check.done()
    check_gate.set()
    await check
    await asyncio.sleep(0)
    assert len(tasks) == 0


async def test_background_drain_survives_a_failed_write() -> None:
    tasks = BackgroundTasks()

    async def boom() -> None:
        raise OSError("disk full")

    failed = tasks.spawn(boom(), write=True)
    await tasks.drain_writes()
    assert isinstance(failed.exception(), OSError)


def test_health_one_message_per_failure_streak() -> None:
    counters: Counter[str] = Counter()
    sent: list[tuple[str, lsp.MessageType]] = []
    health = BackendHealth(counters, lambda m, kind: sent.append((m, kind)), lambda: "http")
    health.ok()
    assert sent == []  # healthy and answering: nothing to say
    for _ in range(3):
        health.failed(BackendError("connection refused"))
    assert counters["failures"] == 3
    [(message, kind)] = sent
    assert kind == lsp.MessageType.Error
    assert message.startswith("cctest: the http backend failed: connection refused.")
    health.ok()
    health.ok()
    assert sent[1:] == [("cctest: the http backend answers again.", lsp.MessageType.Info)]
    health.failed(RuntimeError())
    assert len(sent) == 3 and "RuntimeError." in sent[2][0]  # a new streak, a new message


def _result(suspect: bool) -> EngineResult:
    return EngineResult(
        prompt=Prompt(text="def f(a):\n    ", suffix=""),
        mutants=(),
        dropped_mutants=(),
        completions=(Completion("original", "return a\n", "return a\n"),),
        similarity=((1.0,),),
        verdict=Verdict(
            outliers=(0,) if suspect else (), chosen=0, no_results=(), counts=(0,), threshold=1.6
        ),
        timings_ms={"total": 12.34567},
    )


def test_verdict_params() -> None:
    before = verdict_params("file:///a.py", "r1", "monitor", None)
    assert before == {
        "uri": "file:///a.py",
        "requestId": "r1",
        "mode": "monitor",
        "text": "cctest: not checked yet (monitor mode)",
    }
    after = verdict_params("file:///a.py", "r1", "repair", _result(True), fresh=True)
    assert after["outliers"] == 1 and after["total"] == 1 and after["suspect"] is True
    assert after["engineMs"] == 12.3457
    assert "engineMs" not in verdict_params("file:///a.py", "r1", "repair", _result(False))  # a cache hit


async def test_verdict_is_sent_after_the_current_step() -> None:
    sent: list[tuple[str, dict[str, Any]]] = []
    notifier = VerdictNotifier(lambda method, params: sent.append((method, params)))
    notifier.notify("file:///a.py", "r2", "repair", _result(False))
    assert sent == []  # not before the answer
    await asyncio.sleep(0.01)
    [(method, params)] = sent
    assert method == VERDICT_NOTIFICATION and params["requestId"] == "r2" and params["suspect"] is False


async def test_verdict_send_failure_is_swallowed() -> None:
    def broken(method: str, params: dict[str, Any]) -> None:
        raise RuntimeError("no transport")

    errors: list[dict[str, Any]] = []
    asyncio.get_running_loop().set_exception_handler(lambda loop, context: errors.append(context))
    calls: list[str] = []
    VerdictNotifier(lambda m, p: (calls.append(m), broken(m, p))).notify("file:///a.py", "r3", "repair", None)
    await asyncio.sleep(0.01)
    assert calls == [VERDICT_NOTIFICATION] and errors == []  # tried, and nothing reached the loop
