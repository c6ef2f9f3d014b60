"""``cctest bench --samples n``'s parts: a further draw of a prompt (its original and repaired
completions), its tests in the real sandbox, and pass@k for the original and the repaired
completions in the summary and the report's tables."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from cctest.backends.rules import RuleBackend
from cctest.bench.datasets import load_humaneval
from cctest.bench.draws import draw, judge_draws
from cctest.bench.kinds import get_kind
from cctest.bench.passk import draws_pass_at_k
from cctest.bench.sandbox import Limits
from cctest.bench.store import load_run
from cctest.cli import main
from cctest.config import Settings
from cctest.engine import Engine


def test_a_draw_holds_the_original_and_the_completion_repair_chooses_at_each_t() -> None:
    task = load_humaneval().tasks[0]
    for t in (0.0, 1.0):
        engine = Engine(RuleBackend(fragile=("TempVar",)), Settings(backend="rules", mutants=6, threshold=t))
        result = asyncio.run(engine.run(task.prompt))
        d = draw(result, [t])
        assert d["original"] == result.completions[0].text
        chosen = result.chosen
        assert d["repaired"][f"{t:g}"] == (result.completions[chosen].text if chosen is not None else None)
    failed = draw(RuntimeError("the model went away"), [1.0])
    assert failed["error"] == "RuntimeError: the model went away" and failed["original"] is None


def test_draws_are_judged_by_the_task_s_tests() -> None:
    task = load_humaneval().tasks[2]  # truncate_number
    right, wrong = task.ground_truth, "    return 0.0\n"
    draws: list[dict[str, Any]] = [
        {"original": wrong, "repaired": {"1": right}},
        {"original": right, "repaired": {"1": None}},
    ]
    judge_draws(task, draws, Limits(), 2)
    assert [d["passed"] for d in draws] == [
        {"original": False, "repaired": {"1": True}},
        {"original": True, "repaired": {"1": False}},
    ]


def test_pass_at_k_of_the_original_and_repaired_draws_in_summary_and_report(tmp_path: Path) -> None:
    run = tmp_path / "run"
    args = ["bench", "--dataset", "humaneval", "--backend", "rules", "--limit", "2", "-k", "3"]
    assert main([*args, "--thresholds", "1", "--out", str(run), "--no-progress"]) == 0
    config, records = load_run(run)
    first = [r["tests"][0]["outcome"] == "passed" for r in records]
    # nine more draws per prompt: the original passes in 3 of them, the repaired one in all
    for r in records:
        r["draws"] = [
            {"original": "x", "repaired": {"1": "y"}, "passed": {"original": i < 3, "repaired": {"1": True}}}
            for i in range(9)
        ]
    drawn = draws_pass_at_k(records, ["1"])
    assert drawn is not None and drawn["samples"] == 10 and drawn["prompts"] == 2
    c = [3 + f for f in first]  # passes among the 10 draws of each prompt
    assert drawn["original"]["pass@1"] == pytest.approx(sum(x / 10 for x in c) / 2)
    assert drawn["original"]["pass@10"] == 1.0
    assert set(drawn["original"]) == {"pass@1", "pass@10"}  # 100 > n: left out
    kind = get_kind("completion")
    summary = kind.summarize(config, records)
    assert summary["pass_at_k"] == json.loads(json.dumps(drawn))
    table = next(v for k, v in kind.tables(summary).items() if k.startswith("pass@k (10 draws per prompt"))
    assert table[0] == ["", "original", "repaired T=1"]
    assert [row[0] for row in table[1]] == ["pass@1", "pass@10"]
    # a run without draws has no pass@k table
    assert "pass_at_k" not in kind.summarize(config, load_run(run)[1])


def test_bench_samples_n_draws_each_prompt_n_times_and_reports_pass_at_k(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    args = [
        "bench",
        "--dataset",
        "humaneval",
        "--backend",
        "rules",
        "--limit",
        "2",
        "-k",
        "3",
        "--thresholds",
        "1",
    ]
    assert main([*args, "--samples", "3", "--out", str(tmp_path / "greedy"), "--no-progress"]) != 0
    assert "needs --temperature above 0" in capsys.readouterr().err
    assert main([*args, "--samples", "3", "--temperature", "0.8", "--out", str(run), "--no-progress"]) == 0
    config, records = load_run(run)
    assert config["samples"] == 3
    for r in records:
        assert len(r["draws"]) == 2
        for d in r["draws"]:  # the rules backend draws the same completion every time
            assert d["original"] == r["completions"][0]["text"]
            assert d["passed"]["original"] == (r["tests"][0]["outcome"] == "passed")
    summary = json.loads((run / "summary.json").read_text())
    assert summary["pass_at_k"]["samples"] == 3 and set(summary["pass_at_k"]["original"]) == {"pass@1"}
    passed = sum(r["tests"][0]["outcome"] == "passed" for r in records) / len(records)
    assert summary["pass_at_k"]["original"]["pass@1"] == pytest.approx(passed)
    assert "pass@k (3 draws per prompt" in capsys.readouterr().out
