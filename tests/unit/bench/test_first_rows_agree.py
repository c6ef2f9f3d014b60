"""The adaptive-k figure's script reads a bench run's records: which prompts' first rows agree."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "benchmarks" / "first_rows_agree.py"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, str(SCRIPT), *args]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=600, check=False)


def test_counts_the_prompts_whose_first_rows_complete_alike(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{}", encoding="utf-8")
    rows = [
        ["a", "a", "a", "b"],  # the original and its first two mutants agree
        ["a", "b", "a", "a"],  # the first mutant already differs
        ["x", "x", "x", "x"],  # all agree
        ["a", "a"],  # fewer mutants: not counted
    ]
    records = [
        {"task_id": f"t/{i}", "index": i, "completions": [{"text": t} for t in texts]}
        for i, texts in enumerate(rows)
    ]  # a run's records name their task: the run directory's reader refuses any that do not
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    done = _run(str(tmp_path), "--most", "3")
    assert done.returncode == 0, done.stderr
    assert "3 prompts with all their mutants" in done.stdout
    assert "first 1 mutant(s) identical: 2/3" in done.stdout
    assert "first 2 mutant(s) identical: 2/3" in done.stdout
    assert "first 3 mutant(s) identical: 1/3" in done.stdout


def test_refuses_what_is_not_a_run(tmp_path: Path) -> None:
    done = _run(str(tmp_path))
    assert done.returncode == 2 and done.stderr.count("\n") == 1


def test_without_a_run_it_benchmarks_the_bundled_model_first() -> None:
    done = _run("--limit", "2", "--most", "2")
    assert done.returncode == 0, done.stderr
    assert "2 prompts with all their mutants" in done.stdout
    assert len([line for line in done.stdout.splitlines() if "mutant(s) identical" in line]) == 2
