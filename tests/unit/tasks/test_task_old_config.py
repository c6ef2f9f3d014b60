"""A task run's ``config.json`` embeds the engine's settings (``"settings"``, as ``Settings``
writes them) instead of copying the backend, model, temperature, ... beside the run's own fields;
a task run written by an older cctest, in the flat shape (``tests/data/tasks/old_run``: a real
``cctest bench tasks`` run of the rules backend on 3 tasks, interrupted after 2, its summary,
terminal report and report settings once finished), still resumes, reports and compares."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from report_runs import report_settings

from cctest.bench.runner import recorded_settings
from cctest.bench.store import load_run
from cctest.cli import main
from cctest.config import Settings

DATA = Path(__file__).resolve().parents[2] / "data" / "tasks"
OLD = DATA / "old_run"
BASE = ["bench", "tasks", "--tasks", "small.jsonl", "--backend", "rules", "--no-progress", "--inputs", "20"]


@pytest.fixture
def old_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The old run, interrupted after 2 of its 3 tasks, as it would lie in the current directory."""
    monkeypatch.chdir(tmp_path)
    shutil.copy(DATA / "small.jsonl", tmp_path / "small.jsonl")
    run = tmp_path / "run"
    run.mkdir()
    config = json.loads((OLD / "config.json").read_text(encoding="utf-8"))
    assert "backend" in config and "settings" not in config  # the old, flat shape
    config["source"] = str((tmp_path / "small.jsonl").resolve())
    (run / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    shutil.copy(OLD / "results.jsonl", run / "results.jsonl")
    return run


def test_a_new_task_run_embeds_the_engine_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    shutil.copy(DATA / "small.jsonl", tmp_path / "small.jsonl")
    assert main([*BASE, "--out", "run", "--limit", "1", "--temperature", "0.5", "--rounds", "1"]) == 0
    stored = json.loads((tmp_path / "run" / "config.json").read_text(encoding="utf-8"))
    expected = Settings(backend="rules", temperature=0.5)
    assert stored["settings"] == recorded_settings(expected)  # as Settings writes them, none copied
    assert not {"backend", "model", "temperature", "max_new_tokens", "seed"} & set(stored)
    assert list(stored) == [
        "kind", "source", "tasks", "mode", "rounds", "limit", "instruction", "system", "oracle", "suite",
        "settings",
    ]  # fmt: skip
    # every reader sees the flat shape an older run wrote
    config, _ = load_run(tmp_path / "run")
    assert list(config) == [
        "kind", "source", "tasks", "backend", "model", "mode", "rounds", "temperature",
        "max_new_tokens", "seed", "limit", "instruction", "system", "oracle", "suite",
    ]  # fmt: skip
    assert (config["backend"], config["model"], config["temperature"]) == ("rules", None, 0.5)
    assert (config["max_new_tokens"], config["seed"]) == (expected.max_new_tokens, expected.seed)


def test_an_old_task_run_resumes_and_reports_as_it_did(
    old_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*BASE, "--out", "run", "--resume"]) == 0
    captured = capsys.readouterr()
    assert "resuming run: 2 of 3 prompts already done" in captured.err
    assert captured.out == (OLD / "report.txt").read_text(encoding="utf-8")
    assert len((old_run / "results.jsonl").read_text().splitlines()) == 3
    assert json.loads((old_run / "summary.json").read_text()) == json.loads(
        (OLD / "summary.json").read_text()
    )
    # the old config.json is left as it was written
    assert "settings" not in json.loads((old_run / "config.json").read_text())

    assert main(["bench", "report", "run"]) == 0
    assert capsys.readouterr().out == (OLD / "report.txt").read_text(encoding="utf-8")
    source = str((old_run.parent / "small.jsonl").resolve())
    expected = json.loads((OLD / "report_settings.json").read_text(encoding="utf-8"))
    assert report_settings(old_run) == [[k, source if v == "TASKS_SOURCE" else v] for k, v in expected]

    # the settings it was made with are still what a resume is checked against
    assert main([*BASE, "--out", "run", "--resume", "--temperature", "0.5", "--rounds", "1"]) == 2
    assert "different settings (temperature)" in capsys.readouterr().err
    assert main([*BASE, "--out", "run", "--resume", "--max-new-tokens", "32"]) == 2
    assert "different settings (max_new_tokens)" in capsys.readouterr().err


def test_an_old_task_run_compares_with_a_new_one_of_the_same_settings(
    old_run: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*BASE, "--out", "run", "--resume"]) == 0
    assert main([*BASE, "--out", "new"]) == 0
    assert "settings" in json.loads((old_run.parent / "new" / "config.json").read_text())
    assert report_settings(old_run) == report_settings(old_run.parent / "new")
    capsys.readouterr()
    assert main(["bench", "compare", "run", "new", "--out", "cmp"]) == 0
    assert "backend / model" in capsys.readouterr().out
    assert "settings are the same." in (old_run.parent / "cmp" / "compare.html").read_text()
