"""``benchmarks/real_server_repair.py`` run as a user runs it, against the ``llama-server`` that
``make setup-e2e`` builds: one cursor, the bundled model, both slot settings, every request
answered."""

from __future__ import annotations

import re

from llama_helpers import llama_server_binary
from run_benchmark_script import run_benchmark_script


def test_real_server_repair_prints_each_ratio_and_loses_no_answer() -> None:
    llama_server_binary()  # one sentence when the server is not built
    args = ("--positions", "1", "--seeds", "1", "--models", "bundled", "-k", "2", "--max-new-tokens", "8")
    got = run_benchmark_script("real_server_repair.py", *args, timeout=900)
    assert got.returncode == 0, got.stderr[-2000:]
    for kind in ("proxy cold", "proxy warm", "http cold", "http warm"):
        assert len(re.findall(rf"{kind}\s+/ plain: median\s+\d+\.\d+x", got.stdout)) == 2, got.stdout
    assert got.stdout.count("answers lost: 0;") == 2, got.stdout
