"""``cctest bench tasks`` end to end on the shared run machinery: the run directory, resume after
an interruption, rounds, prompts batched per backend call, reports and compare, and its errors."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from cctest.backends.base import Outcome
from cctest.backends.rules import RuleBackend
from cctest.bench.store import RunStore, load_run
from cctest.cli import main
from cctest.config import Settings
from cctest.tasks import OracleSettings, Task, load_tasks
from cctest.tasks.run import TaskRunConfig, run_tasks, summarize_tasks

DATA = Path(__file__).parents[2] / "data" / "tasks" / "small.jsonl"
BASE = ["bench", "tasks", "--tasks", str(DATA), "--backend", "rules", "--no-progress", "--inputs", "20"]


def test_run_report_and_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "run"
    assert main([*BASE, "--out", str(run)]) == 0
    config, records = load_run(run)
    assert config["kind"] == "tasks" and config["mode"] == "auto" and config["rounds"] == 1
    assert {r["mode"] for r in records} == {"completion"}  # the rules backend has no chat template
    assert config["oracle"]["inputs"] == 20
    # the rules backend completes `return a + b` with the stub's parameters: right for add only
    cats = {r["task_id"]: [a["category"] for a in r["rounds"]] for r in records}
    assert cats["add"] == ["passed"]
    assert cats["slice"] == ["fuzzing_failure"]
    add = records[0]
    assert add["prompt"].startswith("def add(a, b):") and add["rounds"][0]["inputs_passed"] == 20
    summary = json.loads((run / "summary.json").read_text())
    assert summary["counts"] == {"tasks": 3, "answers": 3, "backend_errors": 0, "rounds": 1}
    assert summary["categories"]["passed"] == 1 and summary["pass_rate"] == pytest.approx(1 / 3)
    html = (run / "report.html").read_text()
    assert "Answers by category" in html and "fuzzing_failure" in html and "docs/tasks.md" in html
    out = capsys.readouterr().out
    assert "pass rate" in out and "33.3%" in out
    # the report is rebuilt from results.jsonl alone
    (run / "summary.json").unlink()
    assert main(["bench", "report", str(run)]) == 0
    assert json.loads((run / "summary.json").read_text()) == summary


def test_resume_after_an_interruption_runs_only_what_is_missing(tmp_path: Path) -> None:
    run = tmp_path / "run"
    assert main([*BASE, "--out", str(run)]) == 0
    results = run / "results.jsonl"
    lines = results.read_bytes().splitlines(keepends=True)
    first = json.loads(lines[0])
    # an interruption: one record written, the next one torn mid-write
    results.write_bytes(lines[0] + lines[1][:25])
    assert main([*BASE, "--out", str(run), "--resume"]) == 0
    records = RunStore(results.parent).records()
    assert sorted(r["task_id"] for r in records) == ["add", "mean", "slice"]  # each once
    assert records[0] == first  # kept, not redone
    # other settings cannot resume this run
    assert main([*BASE, "--out", str(run), "--resume", "--rounds", "2"]) == 2


def test_rounds_default_to_five_when_sampling_and_each_is_judged(tmp_path: Path) -> None:
    run = tmp_path / "run"
    assert main([*BASE, "--out", str(run), "--temperature", "0.7", "--limit", "1"]) == 0
    config, [record] = load_run(run)
    assert config["rounds"] == 5 and config["temperature"] == 0.7
    assert [a["round"] for a in record["rounds"]] == [0, 1, 2, 3, 4]
    assert all(a["category"] == "passed" for a in record["rounds"])


class _Counting(RuleBackend):
    """The rules backend, counting the prompts of each call."""

    calls: list[int] = []

    async def complete(
        self, prompts: Sequence[str], *, suffixes: Sequence[str] | None = None
    ) -> list[Outcome]:
        type(self).calls.append(len(prompts))
        return await super().complete(prompts, suffixes=suffixes)


class _Silent(RuleBackend):
    """A model that returns nothing (an empty completion) for every prompt."""

    async def complete(
        self, prompts: Sequence[str], *, suffixes: Sequence[str] | None = None
    ) -> list[Outcome]:
        return ["" for _ in prompts]


def _config(n: int, rounds: int, tmp: Path) -> TaskRunConfig:
    return TaskRunConfig(
        kind="tasks",
        source=str(DATA),
        tasks=n,
        mode="completion",
        rounds=rounds,
        settings=Settings(backend="rules", max_new_tokens=64),
    )


def test_many_prompts_and_their_rounds_go_in_one_backend_call(tmp_path: Path) -> None:
    tasks = load_tasks(DATA)
    config = _config(3, 2, tmp_path)
    store: RunStore[dict[str, Any]] = RunStore(tmp_path)
    store.prepare(config, resume=False)
    _Counting.calls = []
    records = asyncio.run(
        run_tasks(
            tasks,
            Settings(backend="rules"),
            config,
            store,
            oracle=OracleSettings(inputs=10),
            batch_prompts=2,
            backend_factory=lambda s: _Counting(),
            progress=False,
        )
    )
    assert _Counting.calls == [4, 2]  # 2 tasks x 2 rounds, then 1 task x 2 rounds
    assert [len(r["rounds"]) for r in records] == [2, 2, 2]
    assert [r["task_id"] for r in records] == ["add", "mean", "slice"]  # task order, whatever the batches


def test_a_model_that_returns_nothing_is_no_function(tmp_path: Path) -> None:
    tasks = load_tasks(DATA)[:1]
    config = _config(1, 1, tmp_path)
    store: RunStore[dict[str, Any]] = RunStore(tmp_path)
    store.prepare(config, resume=False)
    [record] = asyncio.run(
        run_tasks(
            tasks,
            Settings(backend="rules"),
            config,
            store,
            backend_factory=lambda s: _Silent(),
            progress=False,
        )
    )
    assert record["rounds"][0]["category"] == "no_function"
    assert record["rounds"][0]["detail"] == "the model returned nothing"


def test_chat_on_a_backend_that_cannot_chat_is_recorded_as_backend_errors(tmp_path: Path) -> None:
    run = tmp_path / "run"
    assert main([*BASE, "--out", str(run), "--chat", "--limit", "1"]) == 0
    _, [record] = load_run(run)
    assert record["mode"] == "chat" and record["prompt"][0]["role"] == "user"
    assert record["rounds"][0]["category"] is None and "cannot answer chat" in record["rounds"][0]["error"]
    assert summarize_tasks([record])["counts"]["backend_errors"] == 1


def test_compare_two_task_runs_and_refuse_other_kinds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    assert main([*BASE, "--out", str(a)]) == 0
    assert main([*BASE, "--out", str(b), "--limit", "1"]) == 0
    capsys.readouterr()
    assert main(["bench", "compare", str(a), str(b), "--out", str(tmp_path / "cmp")]) == 0
    out = capsys.readouterr().out
    assert "pass rate" in out and "33.3%" in out and "100.0%" in out
    assert "fuzzing_failure" in (tmp_path / "cmp" / "compare.html").read_text()
    bench = tmp_path / "bench"
    assert (
        main(
            [
                "bench",
                "--dataset",
                str(Path(__file__).parents[2] / "data" / "bench" / "tasks.jsonl"),
                "--backend",
                "rules",
                "-k",
                "2",
                "--limit",
                "1",
                "--out",
                str(bench),
                "--no-progress",
            ]
        )
        == 0
    )
    capsys.readouterr()
    assert main(["bench", "compare", str(a), str(bench)]) == 2
    assert "only runs of one kind compare" in capsys.readouterr().err


def _broken_task_file(tmp_path: Path) -> Path:
    [task] = load_tasks(DATA)[:1]
    bad = task.replace(reference="def add(a, b):\n    raise ValueError('no')\n", tests=())
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(bad.to_dict()) + "\n")
    return path


@pytest.mark.parametrize(
    "argv, message",
    [
        (["bench", "tasks", "--backend", "rules"], "needs --tasks FILE.jsonl"),
        (["bench", "tasks", "--tasks", "/nonexistent.jsonl", "--backend", "rules"], "does not exist"),
        ([*BASE, "--rounds", "0"], "--rounds must be at least 1"),
        ([*BASE, "--instruction", "Write {name}"], "must contain {description}"),
    ],
)
def test_errors_are_one_sentence_and_exit_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert main([*argv, "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_a_reference_that_fails_its_own_inputs_stops_the_run_before_the_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = _broken_task_file(tmp_path)
    argv = [
        "bench",
        "tasks",
        "--tasks",
        str(bad),
        "--backend",
        "rules",
        "--no-progress",
        "--out",
        str(tmp_path / "r"),
    ]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "raises on every one of its 100 generated inputs" in err and err.count("\n") == 1
    assert RunStore(tmp_path / "r").records() == []


def test_a_group_with_a_broken_reference_is_skipped_recorded_and_reported(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """With ``skip_broken``, a task whose reference fails its own test takes its whole group out of
    the run (one logged sentence, ``skipped`` records, the summary's ``skipped``), and the rest runs."""
    from cctest.bench.report import finish_run
    from cctest.errors import TaskError
    from cctest.tasks.run import TasksKind, check_tasks

    add, mean, middle = load_tasks(DATA)
    group = {"group": "G"}
    sound = replace(middle, meta=group)
    broken = replace(
        middle, task_id="slice-broken", tests=("assert middle([0, 1, 2, 3]) == [9]",), meta=group
    )
    tasks = [add, sound, broken, mean]
    oracle = OracleSettings(inputs=10)
    with pytest.raises(TaskError, match="slice-broken"):
        check_tasks(tasks, oracle)  # without the option, the first broken task stops everything

    def of(t: Task) -> str:
        return str(t.meta.get("group", t.task_id))

    reasons = check_tasks(tasks, oracle, skip_broken=of)
    assert list(reasons) == ["G"] and "'slice-broken': the reference fails its own checks" in reasons["G"]
    config = _config(len(tasks), 1, tmp_path)
    store: RunStore[dict[str, Any]] = RunStore(tmp_path)
    store.prepare(config, resume=False)

    def run(done: Sequence[dict[str, Any]], backend: type[RuleBackend]) -> list[dict[str, Any]]:
        return asyncio.run(
            run_tasks(
                tasks,
                Settings(backend="rules"),
                config,
                store,
                done=done,
                oracle=oracle,
                backend_factory=lambda s: backend(),
                progress=False,
                skip_broken=of,
            )
        )

    with caplog.at_level("WARNING", logger="cctest.tasks.run"):
        records = run((), RuleBackend)
    said = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(said) == 1 and said[0].startswith("cctest bench tasks: skipping G; task 'slice-broken'")
    assert [(r["task_id"], bool(r.get("skipped")), len(r["rounds"])) for r in records] == [
        ("add", False, 1),
        ("slice", True, 0),
        ("slice-broken", True, 0),
        ("mean", False, 1),
    ]
    assert RunStore(tmp_path).records() == [r for r in records if r.get("skipped")] + [
        r for r in records if not r.get("skipped")
    ]  # the skipped records are written first, before any model call
    summary = summarize_tasks(records)
    assert summary["counts"]["tasks"] == 2 and summary["counts"]["answers"] == 2
    assert summary["skipped"] == {"G": {"reason": reasons["G"], "tasks": 2}}
    assert "Skipped, and why" in TasksKind().tables(summary)
    finish_run(store, config.to_dict(), records)
    assert "slice-broken" in (tmp_path / "report.html").read_text()
    # resuming finds every task done, the skipped ones included: nothing is checked or asked again
    again = run(records, _Silent)
    assert again == records
