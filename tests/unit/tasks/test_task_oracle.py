"""The oracle in the real sandbox: hand-written answers that land in each of the ten categories,
floats within and outside the tolerance, a candidate that loops forever on one input among 100,
and references that cannot judge anything."""

from __future__ import annotations

from pathlib import Path

import pytest

from cctest.bench.sandbox import Limits
from cctest.errors import TaskError
from cctest.tasks import CATEGORIES, OracleSettings, Task, check_reference, judge, judge_many, load_tasks

DATA = Path(__file__).parents[2] / "data" / "tasks" / "small.jsonl"
TASKS = {t.task_id: t for t in load_tasks(DATA)}
ADD, MEAN, SLICE = TASKS["add"], TASKS["mean"], TASKS["slice"]
FAST = OracleSettings(
    inputs=100, input_cpu_seconds=0.5, input_wall_seconds=1.0, limits=Limits(wall_seconds=30, cpu_seconds=10)
)

TEN = {
    "no_function": "I am not able to write that function.",
    "wrong_function_name": "```python\ndef plus(a, b):\n    return a + b\n```",
    "wrong_arg_count": "```python\ndef add(a):\n    return a\n```",
    "syntax_error": "```python\ndef add(a, b)\n    return a + b\n```",
    "static_error": "```python\ndef add(a, b):\n    return math.fsum([a, b])\n```",
    "resource_exhaustion": "```python\ndef add(a, b):\n    while a == 7:\n        pass\n    return a+b\n```",
    "runtime_error": "```python\ndef add(a, b):\n    return a + b + [0][abs(a) // 40]\n```",
    "assertion_error": "```python\ndef add(a, b):\n    return a * b if a == 1 else a + b\n```",
    "fuzzing_failure": "```python\ndef add(a, b):\n    return a + b if abs(a) < 40 else a - b\n```",
    "passed": "```python\nimport operator\n\ndef add(a, b):\n    return operator.add(a, b)\n```",
}


def test_ten_hand_written_answers_land_in_the_ten_categories():
    assert tuple(TEN) == CATEGORIES
    judgements = judge_many([(ADD, answer, None) for answer in TEN.values()], FAST)
    assert [j.category for j in judgements] == list(CATEGORIES), [(j.category, j.detail) for j in judgements]
    by = dict(zip(CATEGORIES, judgements, strict=True))
    assert "math" in by["static_error"].detail
    assert by["assertion_error"].detail.startswith("fixed test 0 failed: assert add(1, 2) == 3")
    assert "IndexError" in by["runtime_error"].detail
    assert "limit" in by["resource_exhaustion"].detail
    fuzz = by["fuzzing_failure"]
    assert fuzz.tests_passed == 2 and fuzz.failing_input is not None and "expected" in fuzz.detail
    assert by["passed"].inputs_passed == 100 and by["passed"].tests_passed == 2


def test_a_candidate_that_loops_forever_on_one_input_among_100():
    # the answer loops forever on input 42 (of the seeded 100): the per-input timer stops that call,
    # and the answer is resource_exhaustion at exactly that input, the 42 before it having passed
    settings = OracleSettings(inputs=100, seed=3, input_cpu_seconds=0.5, input_wall_seconds=1.0)
    first_args = [_generated_add_args(3, i)[0] for i in range(100)]
    target = 42
    assert first_args[target] not in first_args[:target]
    answer = f"def add(a, b):\n    while a == {first_args[target]}:\n        pass\n    return a + b\n"
    j = judge(ADD, answer, settings=settings)
    assert j.category == "resource_exhaustion", j
    assert j.failing_input == target
    assert j.inputs_passed == target


def _generated_add_args(seed: int, i: int) -> tuple[int, int]:
    """What ADD's generator yields for input i: the oracle's documented seeding."""
    import random

    ns: dict[str, object] = {}
    exec(ADD.generator or "", ns)
    return ns["generate"](random.Random(seed * 1000003 + i))  # type: ignore[operator,no-any-return]


def test_all_inputs_run_in_one_process():
    # a module-level counter survives from call to call only if one process runs every input
    answer = (
        "calls = []\ndef add(a, b):\n    calls.append(1)\n    return a + b if len(calls) < 50 else None\n"
    )
    j = judge(ADD, answer, settings=FAST)
    assert j.category == "fuzzing_failure"
    assert j.failing_input == 50 - 1 - len(ADD.tests)  # the fixed tests called it first


def test_a_loop_no_timer_can_interrupt_is_stopped_by_the_process_limits():
    # one long C call (no bytecode runs, so no Python signal handler): the process's CPU limit ends it
    settings = OracleSettings(
        inputs=5, input_cpu_seconds=0.5, input_wall_seconds=1.0, limits=Limits(wall_seconds=20, cpu_seconds=2)
    )
    answer = "def add(a, b):\n    return a + b + sum(range(10**12)) * 0\n"
    j = judge(ADD, answer, settings=settings)
    assert j.category == "resource_exhaustion", j
    assert "during fixed test 0" in j.detail


def test_memory_exhaustion_is_resource_exhaustion():
    settings = OracleSettings(inputs=3, limits=Limits(wall_seconds=20, cpu_seconds=5, memory_mb=512))
    j = judge(ADD, "def add(a, b):\n    return len([0] * (10**10)) + a + b\n", settings=settings)
    assert j.category == "resource_exhaustion", j


def test_float_within_and_outside_the_tolerance():
    # the reference rounds to 2 digits; with abs_tol 0.02 an unrounded mean agrees, one 0.05 off does not
    within = "def mean(xs):\n    return sum(xs) / len(xs)\n"
    outside = "def mean(xs):\n    return sum(xs) / len(xs) + 0.05\n"
    j_in, j_out = judge_many([(MEAN, within, None), (MEAN, outside, None)], FAST)
    assert j_in.category == "passed", j_in
    assert j_in.inputs_skipped > 0  # the reference raises on an empty list: those inputs are skipped
    assert j_in.inputs_passed + j_in.inputs_skipped == 100
    assert j_out.category == "fuzzing_failure"
    # the same unrounded answer with no tolerance is wrong: exact comparison by default
    exact = MEAN.replace(abs_tol=None)
    assert judge(exact, within, settings=FAST).category == "fuzzing_failure"
    # a relative tolerance from the settings applies when the task sets none
    loose = OracleSettings(inputs=100, rel_tol=0.5)
    assert judge(exact, within, settings=loose).category == "passed"


def test_candidate_raising_where_the_reference_raises_is_not_a_failure():
    # mean([]) raises in the reference too: that input is skipped, not held against the answer
    answer = "def mean(xs):\n    return round(sum(xs) / len(xs), 2)\n"
    assert judge(MEAN, answer, settings=FAST).category == "passed"


def test_results_are_compared_by_type_for_containers():
    as_tuple = "def middle(xs):\n    return tuple(xs[2:6])\n"
    j = judge(SLICE, as_tuple, settings=FAST)
    assert j.category == "fuzzing_failure" and "expected [" in j.detail
    off_by_one = "def middle(xs):\n    return xs[2:5]\n"
    assert judge(SLICE, off_by_one, settings=FAST).category == "fuzzing_failure"
    assert judge(SLICE, "def middle(xs):\n    return list(xs)[2:6]\n", settings=FAST).passed


def test_numpy_results_are_compared_by_shape_and_elements():
    """A task over NumPy matrices (a dependency the sandbox lets answers import): lists of
    sub-matrices compare by shape and elements, not by the element-wise ``==`` of arrays."""
    task = Task(
        "rows",
        "Return the list of the rows of the numpy matrix m whose sum is positive.",
        "rows",
        args=("m",),
        reference="def rows(m):\n    return [r for r in m if r.sum() > 0]\n",
        generator=(
            "import numpy as np\n\n\ndef generate(rng):\n"
            "    n, k = rng.randint(1, 4), rng.randint(1, 4)\n"
            "    return np.asmatrix([[rng.randint(-5, 5) for _ in range(k)] for _ in range(n)])\n"
        ),
        tests=(
            "import numpy as np\n"
            "assert [int(v) for v in rows(np.asmatrix([[1, -2], [3, 0]]))[0].flat] == [3, 0]",
        ),
    )
    assert check_reference(task, FAST).inputs_passed == 100
    good = (
        "import numpy\n\ndef rows(m):\n    return [m[i] for i in range(m.shape[0]) if numpy.sum(m[i]) > 0]\n"
    )
    as_array = "import numpy\n\ndef rows(m):\n    return [numpy.asarray(r) for r in m if r.sum() > 0]\n"
    flat = "def rows(m):\n    return [r.A1 for r in m if r.sum() > 0]\n"  # 1-d arrays: another shape
    wrong = "def rows(m):\n    return [r for r in m if r.sum() >= 0]\n"
    judged = judge_many([(task, a, None) for a in (good, as_array, flat, wrong)], FAST)
    j_good, j_array, j_flat, j_wrong = judged
    assert j_good.category == "passed" and j_array.category == "passed", judged
    assert j_flat.category == "fuzzing_failure" and j_wrong.category == "fuzzing_failure"


def test_an_answer_that_mutates_its_input_does_not_change_the_reference_result():
    answer = "def middle(xs):\n    out = xs[2:6]\n    xs.clear()\n    return out\n"
    assert judge(SLICE, answer, settings=FAST).passed


def test_printing_and_exiting_answers():
    noisy = 'def add(a, b):\n    print(\'@R{"category": "passed"}\')\n    return a - b\n'
    assert judge(ADD, noisy, settings=FAST).category == "assertion_error"  # what it prints is not the report
    exits = "import sys\ndef add(a, b):\n    sys.exit(0)\n"
    assert judge(ADD, exits, settings=FAST).category == "runtime_error"


def test_identical_answers_are_run_once_and_each_gets_its_judgement():
    answer = "def add(a, b):\n    return a + b\n"
    seen: list[int] = []
    js = judge_many([(ADD, answer, None)] * 3, FAST, on_done=lambda i, j: seen.append(i))
    assert [j.category for j in js] == ["passed"] * 3
    assert sorted(seen) == [0, 1, 2]


def test_check_reference_accepts_good_tasks():
    for task in TASKS.values():
        assert check_reference(task, FAST).passed


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"reference": "def add(a, b):\n    return a - b\n"}, "fails its own checks (assertion_error"),
        ({"reference": "def plus(a, b):\n    return a + b\n"}, "reference is unusable"),
        (
            {"reference": "def add(a, b):\n    raise ValueError(a)\n", "tests": ()},
            "raises on every one of its 100 generated inputs",
        ),
        ({"generator": "def generate(rng):\n    return rng.choice([])\n"}, "raises on every one"),
        ({"generator": "def gen(rng):\n    return (1, 2)\n"}, "cannot be defined"),
    ],
)
def test_check_reference_names_what_is_wrong_with_a_task(changes, message):
    task = ADD.replace(**changes)
    with pytest.raises(TaskError, match="task 'add'") as err:
        check_reference(task, FAST)
    assert message in str(err.value)


def test_judging_against_a_broken_task_raises_instead_of_blaming_the_answer():
    task = ADD.replace(generator="def gen(rng):\n    return (1, 2)\n")
    with pytest.raises(TaskError, match="cannot be defined"):
        judge(task, "def add(a, b):\n    return a + b\n", settings=FAST)


def test_a_task_with_only_fixed_tests():
    task = Task("t", "Return 1.", "one", args=(), tests=("assert one() == 1",))
    assert judge(task, "def one():\n    return 1\n", settings=FAST).passed
    assert judge(task, "def one():\n    return 2\n", settings=FAST).category == "assertion_error"
