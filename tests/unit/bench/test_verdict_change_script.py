"""``benchmarks/verdict_change.py``: a run's flags against a baseline's, per T, from two run
directories (records written here, their F1 worked out by hand)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

from run_benchmark_script import run_benchmark_script


def _record(
    task: str, failed: list[bool], whole: list[int], early: list[int], settled: list[int]
) -> dict[str, Any]:
    tests = [{"outcome": "failed" if f else "passed"} for f in failed]
    return {
        "task_id": task,
        "error": None,
        "has_tests": True,
        "completions": [{"text": "x", "is_result": True} for _ in failed],
        "tests": tests,
        "per_T": {"1": {"outliers": whole, "chosen": 0}},
        "early": {
            "error": None,
            "per_T": {"1": {"outliers": early, "chosen": 0}},
            "settled": {"error": None, "per_T": {"1": {"outliers": settled, "chosen": 0}}},
        },
    }


def _write(path: Path, records: list[dict[str, Any]]) -> Path:
    path.mkdir()
    (path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return run_benchmark_script("verdict_change.py", *args, timeout=120)


def test_it_compares_the_chosen_verdict_with_the_baseline_per_prompt(tmp_path: Path) -> None:
    # baseline (whole): flags completions 0 and 1 of "a", which fail and pass: tp 1, fp 1, fn 1
    base = _write(tmp_path / "base", [_record("a", [True, False, True], [0, 1], [], [])])
    # the run: settled flags 0 and 2 (both fail): tp 2, F1 1; early flags nothing: F1 0; its
    # whole verdict flags 2 only: tp 1, fn 1, F1 2/3. "b" has no baseline: left out
    run = _write(
        tmp_path / "run",
        [_record("a", [True, False, True], [2], [], [0, 2]), _record("b", [True], [0], [0], [0])],
    )
    pair = f"{base}:{run}"
    got = {}
    for verdict in ("settled", "early", "whole"):
        done = _run(pair, "--verdict", verdict, "--resamples", "20")
        assert done.returncode == 0, done.stderr
        assert f"{pair}: 1 prompts" in done.stdout and "all pairs" not in done.stdout
        m = re.search(
            r"T=1 +baseline F1 ([\d.]+) +run F1 ([\d.]+) +diff ([-+][\d.]+)"
            r" +95% \[([-+][\d.]+), ([-+][\d.]+)\]",
            done.stdout,
        )
        assert m is not None, done.stdout
        got[verdict] = [float(x) for x in m.groups()]
    assert got["settled"][:3] == [0.5, 1.0, 0.5]
    assert got["early"][:3] == [0.5, 0.0, -0.5]
    assert abs(got["whole"][1] - 2 / 3) < 1e-4
    # one prompt: every resample is that prompt, so the interval is the difference itself
    assert got["settled"][3] == got["settled"][4] == 0.5
    # two pairs are pooled as well
    both = _run(pair, pair, "--resamples", "5")
    assert "all pairs: 2 prompts" in both.stdout


def test_bad_arguments_are_one_sentence_and_exit_2(tmp_path: Path) -> None:
    for args in (["nothing-here"], [f"{tmp_path}:{tmp_path}"]):
        done = _run(*args)
        assert done.returncode == 2 and done.stderr.count("\n") == 1
