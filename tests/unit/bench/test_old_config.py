"""A run directory written by an older cctest, whose ``config.json`` holds the engine's settings as
flat fields (``k``, ``backend``, ``max_new_tokens``, ...) beside the run's own: it resumes, reports
and compares as it did (``tests/data/bench/old_run``: a real run of the rules backend on 4 tasks,
interrupted after 2, its summary, terminal report and report settings once finished)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from report_runs import report_settings

from cctest.cli import main

OLD = Path(__file__).resolve().parents[2] / "data" / "bench" / "old_run"
# (made before the mutants were chosen for their cost: as with --prefill-budget 0)
RULES = ["--backend", "rules", "-k", "2", "--no-progress", "--prefill-budget", "0"]


@pytest.fixture
def old_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The old run, interrupted after 2 of its 4 tasks, as it would lie in the current directory."""
    monkeypatch.chdir(tmp_path)
    shutil.copy(OLD / "data.jsonl", tmp_path / "data.jsonl")
    run = tmp_path / "run"
    run.mkdir()
    config = json.loads((OLD / "config.json").read_text(encoding="utf-8"))
    assert "k" in config and "settings" not in config  # the old, flat shape
    config["dataset_source"] = str((tmp_path / "data.jsonl").resolve())
    (run / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    shutil.copy(OLD / "results.jsonl", run / "results.jsonl")
    return run


def test_an_old_run_resumes_and_reports_as_it_did(old_run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "--dataset", "data.jsonl", *RULES, "--out", "run", "--resume"]) == 0
    assert "resuming run: 2 of 4 prompts already done" in capsys.readouterr().err
    assert len((old_run / "results.jsonl").read_text().splitlines()) == 4
    summary = json.loads((old_run / "summary.json").read_text())
    del summary["timings_ms"]
    assert summary == json.loads((OLD / "summary.json").read_text())

    assert main(["bench", "report", "run"]) == 0
    assert capsys.readouterr().out == (OLD / "report.txt").read_text(encoding="utf-8")
    source = str((old_run.parent / "data.jsonl").resolve())
    expected = json.loads((OLD / "report_settings.json").read_text(encoding="utf-8"))
    assert report_settings(old_run) == [[k, source if v == "DATASET_SOURCE" else v] for k, v in expected]

    # the settings it was made with are still what a resume is checked against
    assert (
        main(["bench", "--dataset", "data.jsonl", *RULES, "--out", "run", "--resume", "--top-p", "0.5"]) == 0
    )
    assert (
        main(
            [
                "bench",
                "--dataset",
                "data.jsonl",
                *RULES[:2],
                "-k",
                "3",
                *RULES[4:],
                "--out",
                "run",
                "--resume",
            ]
        )
        == 2
    )
    assert "different settings (k)" in capsys.readouterr().err


def test_an_old_run_compares_with_a_new_one_of_the_same_settings(
    old_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["bench", "--dataset", "data.jsonl", *RULES, "--out", "run", "--resume"]) == 0
    assert main(["bench", "--dataset", "data.jsonl", *RULES, "--out", "new"]) == 0
    assert report_settings(old_run) == report_settings(old_run.parent / "new")
    capsys.readouterr()
    assert main(["bench", "compare", "run", "new", "--out", "cmp"]) == 0
    assert "backend / model" in capsys.readouterr().out
    assert "settings are the same." in (old_run.parent / "cmp" / "compare.html").read_text()
