"""The ``TypedDict`` of each kind's records and summaries names exactly the fields its runs write:
every field a real run wrote is declared, every field declared required is there, recursively
(mypy checks the writers against these types; this checks the types against what reaches disk)."""

from __future__ import annotations

import json
import typing
from pathlib import Path
from typing import Any, NotRequired

from report_runs import operational_run, run_cli, scripted_server

from cctest.bench.evaluate import EvalRecord, EvalSummary
from cctest.bench.metrics import CompletionSummary
from cctest.bench.runner import CompletionRecord
from cctest.bench.store import load_run
from cctest.cli import main
from cctest.suites.operational import OperationalSummary
from cctest.suites.syntactic import SyntacticSummary
from cctest.suites.turbulence import TurbulenceSummary
from cctest.tasks.run import TaskRecord, TasksSummary

DATA = Path(__file__).resolve().parents[2] / "data"


def shape_errors(value: Any, td: Any, where: str = "") -> list[str]:
    """How ``value`` (a JSON object) differs from the TypedDict ``td``: missing required fields,
    undeclared ones, and the same inside fields typed as TypedDicts (or lists and dicts of them)."""
    hints = typing.get_type_hints(td, include_extras=True)
    required = {k for k, h in hints.items() if typing.get_origin(h) is not NotRequired}
    errors = [f"{where}{k}: missing" for k in sorted(required - set(value))]
    errors += [f"{where}{k}: not declared in {td.__name__}" for k in sorted(set(value) - set(hints))]
    for k, v in value.items():
        if k in hints and v is not None:
            errors += _inner_errors(v, hints[k], f"{where}{k}.")
    return errors


def _inner_errors(value: Any, hint: Any, where: str) -> list[str]:
    if typing.get_origin(hint) is NotRequired:
        hint = typing.get_args(hint)[0]
    options = (
        typing.get_args(hint)
        if typing.get_origin(hint) in (typing.Union, getattr(typing, "UnionType", ()))
        else (hint,)
    )
    for option in options:
        if typing.is_typeddict(option) and isinstance(value, dict):
            return shape_errors(value, option, where)
        origin, args = typing.get_origin(option), typing.get_args(option)
        if origin is list and args and isinstance(value, list):
            return [
                e
                for i, x in enumerate(value)
                if x is not None
                for e in _inner_errors(x, args[0], f"{where}{i}.")
            ]
        if origin is dict and len(args) == 2 and isinstance(value, dict):
            return [e for k, x in value.items() for e in _inner_errors(x, args[1], f"{where}{k}.")]
    return []


def test_the_types_catch_a_field_they_do_not_declare() -> None:
    record = {"task_id": "t", "index": 0, "samples": [{"format": "humaneval", "code": "", "passed": True}]}
    assert shape_errors(record, EvalRecord) == ["samples.0.detail: missing", "samples.0.outcome: missing"]
    record["samples"][0].update(outcome="passed", detail="", base=True, colour="red")
    assert shape_errors(record, EvalRecord) == ["samples.0.colour: not declared in SampleRecord"]


def test_a_completion_run_and_its_evaluation_write_their_types(tmp_path: Path) -> None:
    run, samples, dataset = tmp_path / "run", tmp_path / "samples.jsonl", tmp_path / "tasks.jsonl"
    # the bench's tasks that have tests (evaluate judges samples by tests)
    lines = [line for line in (DATA / "bench" / "tasks.jsonl").read_text().splitlines() if line.strip()]
    dataset.write_text("".join(line + "\n" for line in lines if json.loads(line).get("tests")))
    argv = ["bench", "--dataset", str(dataset), "--backend", "rules", "-k", "3"]
    argv += ["--samples", "2", "--temperature", "0.8", "--no-progress", "--out", str(run)]
    assert main(argv) == 0
    _, records = load_run(run)
    assert records and all(r.get("draws") for r in records)
    assert [e for r in records for e in shape_errors(r, CompletionRecord)] == []
    summary = json.loads((run / "summary.json").read_text())
    assert "pass_at_k" in summary and shape_errors(summary, CompletionSummary) == []

    export = ["bench", "export", str(run), "--format", "humaneval", "--out", str(samples)]
    assert main(export) == 0
    evaluated = tmp_path / "evaluated"
    argv = ["bench", "evaluate", str(samples), "--dataset", str(dataset)]
    assert main([*argv, "--no-progress", "--out", str(evaluated)]) == 0
    _, records = load_run(evaluated)
    assert records and [e for r in records for e in shape_errors(r, EvalRecord)] == []
    summary = json.loads((evaluated / "summary.json").read_text())
    assert shape_errors(summary, EvalSummary) == []


def test_a_task_run_writes_its_types(tmp_path: Path) -> None:
    run = tmp_path / "run"
    argv = ["bench", "tasks", "--tasks", str(DATA / "tasks" / "small.jsonl"), "--backend", "rules"]
    assert main([*argv, "--inputs", "5", "--no-progress", "--out", str(run)]) == 0
    _, records = load_run(run)
    assert records and all(r["rounds"] for r in records)
    assert [e for r in records for e in shape_errors(r, TaskRecord)] == []
    summary = json.loads((run / "summary.json").read_text())
    assert shape_errors(summary, TasksSummary) == []


def test_each_suite_writes_its_summary_type(tmp_path: Path) -> None:
    """syntactic, turbulence and operational: the task run's summary and each suite's own fields,
    every one declared in its type, as real runs against a scripted chat server write them."""
    chat = ["--inputs", "5", "--chat", "--no-progress"]
    with scripted_server() as url:
        http = ["--backend", "http", "--model", url]
        syntactic = ["bench", "syntactic", "--equations", "linear", "--distances", "2", "--variants", "3"]
        run_cli([*syntactic, *http, *chat, "--out", str(tmp_path / "syn")])
        turbulence = ["bench", "turbulence", "--templates", "1", "--instances", "2", "--rounds", "1"]
        run_cli([*turbulence, *http, *chat, "--out", str(tmp_path / "turb")])
        operational_run(tmp_path / "op", url)
    for run, td in (("syn", SyntacticSummary), ("turb", TurbulenceSummary), ("op", OperationalSummary)):
        summary = json.loads((tmp_path / run / "summary.json").read_text())
        assert "pass_rate" in summary and shape_errors(summary, td) == [], run
