"""Running a script of ``benchmarks/`` as a user does, this checkout's code on the path: what the
tests of those scripts share."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_benchmark_script(name: str, *args: str, timeout: int) -> subprocess.CompletedProcess[str]:
    """``python benchmarks/NAME ARGS``, its output captured, within ``timeout`` seconds."""
    return subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / name), *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=timeout,
        check=False,
    )
