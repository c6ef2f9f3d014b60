"""Processes that keep the CPU busy while a test runs, as a loaded laptop's do: the benchmarks'
helper (``benchmarks/_busy.py``), the one both use."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

from _busy import busy as busy_cpus  # noqa: E402

__all__ = ["busy_cpus"]
