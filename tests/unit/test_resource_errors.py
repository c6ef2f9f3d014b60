"""Every kind of program the sandbox runs classifies running out of space the same way: a write
to ``/dev/full`` fails with the kernel's ENOSPC, as a write to a full directory does, and each
judge calls that a resource outcome (``resource_limit`` for a bench sample and a HumanEval+
sample, ``resource_exhaustion`` for a task's answer and a syntactic-suite program), not a runtime
error. The list of such errors lives in one place (``cctest.bench.sandbox.RESOURCE_ERRNOS``); it
had drifted (the task oracle's lacked ENOSPC and EDQUOT, HumanEval+'s driver had none)."""

from __future__ import annotations

from pathlib import Path

from cctest.bench import sandbox
from cctest.bench.humaneval_plus import PlusTask, driver_program, interpret
from cctest.suites.syntactic import build_tasks
from cctest.suites.syntactic_program import judge_programs
from cctest.tasks import OracleSettings, judge, load_tasks

FILL = "open('/dev/full', 'w', buffering=1).write('x\\n')"
LIMITS = sandbox.Limits(wall_seconds=30, cpu_seconds=10)
ORACLE = OracleSettings(inputs=5, input_cpu_seconds=2.0, input_wall_seconds=4.0, limits=LIMITS)


def test_every_program_kind_reads_the_same_list() -> None:
    assert set(sandbox.RESOURCE_ERRNOS) >= {"EAGAIN", "EFBIG", "ENOMEM", "EMFILE", "ENFILE", "ENOSPC"}


def test_a_bench_sample_that_fills_its_space_hit_a_resource_limit() -> None:
    run = sandbox.run_program(FILL + "\nassert True\n", LIMITS)
    assert run.outcome == "resource_limit" and "No space left" in run.detail, run


def test_a_task_answer_that_fills_its_space_exhausted_a_resource() -> None:
    tasks = {
        t.task_id: t for t in load_tasks(Path(__file__).parent.parent / "data" / "tasks" / "small.jsonl")
    }
    answer = f"```python\ndef add(a, b):\n    {FILL}\n    return a + b\n```"
    j = judge(tasks["add"], answer, settings=ORACLE)
    assert j.category == "resource_exhaustion" and "No space left" in j.detail, j


def test_a_humaneval_plus_sample_that_fills_its_space_hit_a_resource_limit() -> None:
    task = PlusTask(
        task_id="t/0",
        prompt="def add(a, b):\n",
        entry_point="add",
        canonical_solution="    return a + b\n",
        base_input=((1, 2), (3, 4)),
        plus_input=((5, 6),),
    )
    code = f"def add(a, b):\n    {FILL}\n    return a + b\n"
    run = sandbox.run_program(driver_program(task, code), LIMITS, output_bytes=8192)
    verdict = interpret(run)
    assert verdict["outcome"] == "resource_limit" and not verdict["base"], verdict


def test_a_syntactic_program_that_fills_its_space_exhausted_a_resource() -> None:
    (task,) = [t for t in build_tasks(["linear"], [1], 1, prompt="paper") if t.meta["distance"] == 0]
    program = f"{FILL}\na, b = float(input()), float(input())\nprint(round(-b / a, 2))\n"
    (j,) = judge_programs([(task, f"```python\n{program}```", None)], ORACLE)
    assert j.category == "resource_exhaustion" and "No space left" in j.detail, j
