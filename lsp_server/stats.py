"""The server's counters and timing sums, and the ``cctest/stats`` numbers made from them."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from cctest.types import EngineResult

#: wire name -> counter name, in the order ``cctest/stats`` lists them.
_REPORTED = {
    "requests": "requests",
    "answered": "answered",
    "cacheHits": "cache_hits",
    "joined": "joined",
    "superseded": "superseded",
    "cancelled": "cancelled",
    "failures": "failures",
    "engineRuns": "engine_runs",
    "backendBuilds": "backend_builds",
    "suspect": "suspect",
    "recorded": "recorded",
    "accepted": "accepted",
    "monitorChecks": "monitor_checks",
    "monitorSkipped": "monitor_skipped",
    "settled": "settled",
    "settleSkipped": "settle_skipped",
    "settleFailed": "settle_failed",
}


class Stats:
    """Counts events and sums engine timings; shares ``counters`` with the job table and backend holder."""

    def __init__(self) -> None:
        self.counters: Counter[str] = Counter()
        self.timing_sums: defaultdict[str, float] = defaultdict(float)

    def engine_run(self, result: EngineResult) -> None:
        """Count one engine run and add its per-stage timings."""
        self.counters["engine_runs"] += 1
        for name, ms in result.timings_ms.items():
            self.timing_sums[name] += ms

    def serve_overhead(self, ms: float) -> None:
        """Add the time a served request spent outside the engine."""
        self.counters["timed_serves"] += 1
        self.timing_sums["serve_overhead"] += ms

    def means(self) -> dict[str, float]:
        """Mean milliseconds per engine stage, plus ``serverOverhead`` once a request was timed."""
        runs = self.counters["engine_runs"]
        means = {
            name: round(total / runs, 3)
            for name, total in self.timing_sums.items()
            if runs and name != "serve_overhead"
        }
        if self.counters["timed_serves"]:
            means["serverOverhead"] = round(
                self.timing_sums["serve_overhead"] / self.counters["timed_serves"], 4
            )
        return means

    def snapshot(self) -> dict[str, Any]:
        """The counters as ``cctest/stats`` reports them, with ``meanTimingsMs``."""
        numbers: dict[str, Any] = {wire: self.counters[name] for wire, name in _REPORTED.items()}
        numbers["meanTimingsMs"] = self.means()
        return numbers
