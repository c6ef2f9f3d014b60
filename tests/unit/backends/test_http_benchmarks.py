"""``benchmarks/http_repair.py`` and ``benchmarks/proxy_latency.py`` run as a user runs them (one
position, the bundled model) and measure every call cold: with the prefix cache kept from the call
before, the second of plain and repair at a position reused the other's prompt and the ratio
followed their order, not the repair's cost."""

from __future__ import annotations

import re

from run_benchmark_script import run_benchmark_script


def test_http_repair_prints_each_kind_and_reuses_nothing() -> None:
    args = ("--positions", "1", "--seeds", "1", "--models", "bundled", "--threads", "1", "-k", "2")
    got = run_benchmark_script("http_repair.py", *args, "--max-new-tokens", "8", timeout=600)
    assert got.returncode == 0, got.stderr[-2000:]
    for kind in ("http streamed", "http whole", "in-process"):
        assert re.search(rf"{kind}\s+repair / plain\s+median\s+\d+\.\d+x\s+p90\s+\d+\.\d+x", got.stdout)
    assert "prompt tokens reused from an earlier call: 0" in got.stdout, got.stdout


def test_proxy_latency_repairs_through_the_proxy_and_reuses_nothing() -> None:
    args = ("--requests", "0", "--positions", "1", "--threads", "1", "-k", "2", "--max-new-tokens", "8")
    got = run_benchmark_script("proxy_latency.py", *args, timeout=600)
    assert got.returncode == 0, got.stderr[-2000:]
    assert re.search(r"1 positions, k = 2, 8 tokens: median \d+\.\d+x", got.stdout), got.stdout
    assert "prompt tokens reused from an earlier call: 0" in got.stdout, got.stdout


def test_a_bad_option_is_one_sentence_and_exit_code_2() -> None:
    got = run_benchmark_script("http_repair.py", "--positions", "0", timeout=120)
    assert got.returncode == 2 and got.stderr.strip().count("\n") == 0, got.stderr


def test_real_server_repair_a_bad_option_is_one_sentence_and_exit_code_2() -> None:
    got = run_benchmark_script("real_server_repair.py", "--positions", "0", timeout=120)
    assert got.returncode == 2 and got.stderr.strip().count("\n") == 0, got.stderr
    assert got.stderr.startswith("--positions")
