"""Unit tests for the server's counters (lsp_server.stats) with plain inputs."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

from lsp_server.stats import Stats


def _result(**timings: float) -> Any:
    return cast(Any, SimpleNamespace(timings_ms=timings))


def test_no_runs_reports_zeros_and_no_means() -> None:
    numbers = Stats().snapshot()
    assert numbers["requests"] == 0 and numbers["engineRuns"] == 0
    assert numbers["meanTimingsMs"] == {}


def test_engine_runs_are_averaged_per_stage() -> None:
    stats = Stats()
    stats.engine_run(_result(total=10.0, generate=4.0))
    stats.engine_run(_result(total=20.0, generate=8.0))
    stats.counters["cache_hits"] += 3
    numbers = stats.snapshot()
    assert numbers["engineRuns"] == 2 and numbers["cacheHits"] == 3
    assert numbers["meanTimingsMs"] == {"total": 15.0, "generate": 6.0}


def test_serve_overhead_is_its_own_mean() -> None:
    stats = Stats()
    stats.serve_overhead(1.0)
    stats.serve_overhead(2.0)
    assert stats.means() == {"serverOverhead": 1.5}
    assert "serve_overhead" not in stats.snapshot()["meanTimingsMs"]
