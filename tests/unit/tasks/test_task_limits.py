"""Per-call time limits (issue 45): relative to the reference's own measured CPU time, as EvalPlus
sets them, with the fixed pair as an option; a correct answer re-judged beside the reference when
it hits a limit, on a machine whose cores are filled by busy processes; and a limit that strikes
in any stage (fixed tests, generated inputs, the reference's check) is ``resource_exhaustion``.

Times are made of CPU, not of sleeping: a call that must take time spins until the process's CPU
clock has advanced, so what it costs does not depend on the machine's load."""

from __future__ import annotations

import os

import pytest
from busy import busy_cpus

from cctest.bench.sandbox import RunResult
from cctest.errors import TaskError
from cctest.tasks import OracleSettings, Task, check_reference, judge_many
from cctest.tasks.oracle import (
    REFERENCE_TIMES,
    check_and_time,
    process_category,
    reference_times,
    with_reference_times,
)

GEN = "def generate(rng):\n    return (rng.randint(0, 9),)\n"
# a function that spends `cpu` seconds of CPU on every call (the process's clock, not the wall's)
SPIN = """import time


def f(x):
    end = time.process_time() + {cpu}
    while time.process_time() < end:
        pass
    return x
"""
# one C call (no bytecode runs inside it, so no signal handler either) that takes far longer
# than the limits below: both timers run out during it, and their signals wait until it returns
C_CALL = "def f(x):\n    return sum(range(30_000_000)) * 0 + x\n"
TINY = OracleSettings(inputs=2, input_cpu_seconds=0.01, input_wall_seconds=0.01)


def _task(reference: str, tests: tuple[str, ...] = (), generator: str | None = GEN) -> Task:
    return Task("t", "Return x.", "f", args=("x",), reference=reference, generator=generator, tests=tests)


def test_each_calls_limit_follows_the_references_time_on_it():
    task = _task("def f(x):\n    return x\n", tests=("assert f(1) == 1", "assert f(2) == 2"))
    settings = OracleSettings(inputs=3, input_limits="reference")
    assert reference_times(task, settings) is None  # not measured: every call gets the fixed pair
    assert settings.call_limits(task) == ([[1.0, 2.0]] * 2, [[1.0, 2.0]] * 3)
    times = {"tests": [0.01, 2.0], "inputs": [None, 0.5, 0.3, 9.0], "seed": 0, "memory_mb": 700}
    timed = with_reference_times(task, times)
    assert timed.meta[REFERENCE_TIMES] == times  # recorded with the task's meta
    # max(floor, 4 x the reference's CPU seconds), the wall clock in the fixed pair's ratio; an
    # input the reference raised on gets the floor; only the inputs asked for
    assert settings.call_limits(timed) == ([[1.0, 2.0], [8.0, 16.0]], [[1.0, 2.0], [2.0, 4.0], [1.2, 2.4]])
    assert OracleSettings(inputs=3, input_limits="reference", limit_factor=2).call_limits(timed)[0][1] == [
        4.0,
        8.0,
    ]
    # the whole process has room for every call, their re-runs, and twice the reference's memory
    limits = settings.process_limits([timed])
    assert limits.cpu_seconds >= 3 * (1 + 1 + 8 + 1 + 2 + 1.2) and limits.memory_mb == 1400
    # fixed limits ignore the times; other seeds or more inputs than measured need a new measure
    assert OracleSettings(inputs=3).call_limits(timed) == ([[1.0, 2.0]] * 2, [[1.0, 2.0]] * 3)
    assert reference_times(timed, OracleSettings(inputs=3, seed=1, input_limits="reference")) is None
    assert reference_times(timed, OracleSettings(inputs=5, input_limits="reference")) is None
    assert "input_limits" not in OracleSettings().to_dict()  # a fixed run's config is as before
    assert OracleSettings(input_limits="reference").to_dict()["limit_factor"] == 4.0


def test_a_reference_slower_than_the_fixed_limit_is_measured_not_dropped():
    slow = _task(SPIN.format(cpu=0.3), tests=("assert f(1) == 1",))
    fixed = OracleSettings(inputs=3, input_cpu_seconds=0.1, input_wall_seconds=0.2)
    with pytest.raises(TaskError, match="resource_exhaustion: fixed test 0: ran past the"):
        check_reference(slow, fixed)
    relative = OracleSettings(
        inputs=3, input_cpu_seconds=0.1, input_wall_seconds=0.2, input_limits="reference"
    )
    judgement, times = check_and_time(slow, relative)
    assert judgement.passed and times is not None
    assert len(times["tests"]) == 1 and len(times["inputs"]) == 3 and times["seed"] == 0
    assert min(times["tests"] + times["inputs"]) >= 0.3  # CPU seconds, each call's own
    assert times["memory_mb"] > 0
    # answers are judged under limits four times the reference's: the same code passes, one
    # that never ends is stopped at its first call; a task without times is measured first
    same = SPIN.format(cpu=0.3) + "\n# the answer\n"
    endless = "def f(x):\n    while True:\n        pass\n"
    for task in (slow, with_reference_times(slow, times)):
        judged = judge_many([(task, same, None), (task, endless, None)], relative)
        assert [j.category for j in judged] == ["passed", "resource_exhaustion"], judged
        assert judged[0].inputs_passed == 3 and judged[0].inputs_skipped == 0
        assert judged[1].detail.startswith("fixed test 0: ran past the")


@pytest.mark.slow
def test_a_correct_answer_is_never_lost_to_a_busy_machine():
    """Every core filled by a busy process (and what else runs on the machine): a correct answer
    whose calls run past the wall clock under that load is run again beside the reference, the
    limit doubling while both run past it, and passes; a wrong one still fails."""
    task = _task(SPIN.format(cpu=0.02), tests=tuple(f"assert f({i}) == {i}" for i in range(4)))
    settings = OracleSettings(inputs=30, input_cpu_seconds=0.1, input_wall_seconds=0.05)
    answers = [SPIN.format(cpu=0.02) + f"\n# answer {k}\n" for k in range(4)]
    slow = SPIN.format(cpu=0.5)  # the right results, but 25 times the reference's CPU
    with busy_cpus((os.cpu_count() or 2) + 1) as procs:
        judged = judge_many([(task, a, None) for a in [*answers, slow]], settings, workers=2)
        assert all(p.poll() is None for p in procs)  # the load was there throughout
    assert [j.category for j in judged[:-1]] == ["passed"] * len(answers), [j.detail for j in judged]
    # every test and input judged: none skipped because the reference too ran past a limit
    assert all((j.tests_passed, j.inputs_passed, j.inputs_skipped) == (4, 30, 0) for j in judged[:-1])
    assert judged[-1].category == "resource_exhaustion" and judged[-1].detail.startswith("fixed test 0")


@pytest.mark.parametrize(
    "stage, task, detail",
    [
        (
            "fixed tests",
            _task("def f(x):\n    return x\n", tests=("assert f(1) == 1",), generator=None),
            "fixed test 0: ran past the",
        ),
        ("generated inputs", _task("def f(x):\n    return x\n"), "input 0, f("),
    ],
)
def test_a_limit_is_resource_exhaustion_in_every_stage_of_an_answer(stage, task, detail):
    """Both timers run out inside one C call: the signal handled second must not escape the
    stage's handler as an exception of its own (a runtime_error)."""
    [judged] = judge_many([(task, C_CALL, None)], TINY)
    assert judged.category == "resource_exhaustion", (stage, judged)
    assert judged.detail.startswith(detail) and "ran past the" in judged.detail, judged.detail


@pytest.mark.parametrize("input_limits", ["fixed", "reference"])
def test_a_limit_is_resource_exhaustion_in_the_references_check(input_limits):
    for task in (_task(C_CALL, tests=("assert f(1) == 1",)), _task(C_CALL)):
        settings = OracleSettings(
            inputs=2,
            input_cpu_seconds=0.01,
            input_wall_seconds=0.01,
            input_limits=input_limits,
            reference_cpu_seconds=0.01,
        )
        with pytest.raises(TaskError) as caught:
            check_reference(task, settings)
        assert "resource_exhaustion" in str(caught.value) and "runtime_error" not in str(caught.value)


def test_a_limits_exception_that_ends_the_process_is_resource_exhaustion():
    assert process_category(RunResult("runtime_error", "_Limit: ('CPU', 1.0)")) == "resource_exhaustion"
    assert process_category(RunResult("runtime_error", "ValueError: x")) == "runtime_error"
