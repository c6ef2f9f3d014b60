"""Turbulence judged as its paper and its harness judge (issue 29): the benchmark's parameter rows,
its prompt, the harness's per-question rules and argument count, Pylint's error checks, time
limits that a loaded machine cannot turn into a failure, and the acceptance figure on the real
recovered benchmark files (read from ``../shared``, never copied into the repository)."""

from __future__ import annotations

import json
import random
import shutil
import sys
from pathlib import Path

import pytest

from cctest.suites import turbulence
from cctest.suites.turbulence import (
    BENCHMARK_INSTRUCTION,
    build_tasks,
    instance_task,
    load_benchmark,
    parameter_rows,
)
from cctest.tasks import OracleSettings, judge_many
from cctest.tasks.model import Task
from cctest.tasks.render import ChatStyle, chat_messages

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT.parent / "shared" / "data" / "turbulence"
COMPLETE = ("25", "27", "45", "48")  # the recovered questions with all four files (SOURCE.txt)


def _data() -> Path:
    if not (DATA / "Benchmark").is_dir():
        pytest.skip("the recovered Turbulence benchmark (shared/data/turbulence) is not beside the clone")
    return DATA


def clone(tmp: Path) -> Path:
    """A scratch clone in the public layout from the recovered files (outside the repository)."""
    data = _data()
    b = tmp / "clone" / "Benchmark"
    shutil.copytree(data / "Benchmark", b)
    shutil.copy(data / "All_questions.json", b / "All_questions.json")
    for f in (data / "manually_chosen_params").glob("Q*.txt"):
        if (b / f.stem).is_dir():
            shutil.copy(f, b / f.stem / "manually_chosen_params.txt")
    return tmp / "clone"


def test_rows_are_the_benchmarks_seed_as_a_string_then_shuffled(tmp_path):
    """send_recieve.py: params = gen_params(q, "1"); random.seed("1"); random.shuffle(params)."""
    (q27,) = load_benchmark(clone(tmp_path), only=["27"])
    ns: dict[str, object] = {}
    exec(q27.genparams, ns)
    expected = ns["gen_params"](27, "1")  # type: ignore[operator]
    random.seed("1")
    random.shuffle(expected)
    rows = parameter_rows([q27])["27"]
    assert rows == [list(r) for r in expected]
    assert rows != [list(r) for r in ns["gen_params"](27, 1)]  # type: ignore[operator]
    tasks = build_tasks([q27], 3)
    assert [t.meta["params"] for t in tasks] == [list(r) for r in expected[:3]]


def test_a_list_row_is_one_value_as_the_benchmark_reads_it(tmp_path):
    """A row that is not a tuple is wrapped as one value (``params = (params,)``)."""
    q = turbulence.Template(
        qid="9",
        question="Write a function called 'f' that takes one argument and returns $0.",
        solution="def f(x):\n    return $0\n",
        tests="",
        genparams="def gen_params(q_no, seed):\n    return [[1, 2], (3,)]\n",
        generator="def input_generator(l, seed):\n    return 0\n",
    )
    assert parameter_rows([q], shuffle=False)["9"] == [[[1, 2]], [3]]
    assert parameter_rows([q], shuffle=False, spread_lists=True)["9"] == [[1, 2], [3]]


def test_the_prompt_is_the_benchmarks_own_wording(tmp_path):
    (q48,) = load_benchmark(clone(tmp_path), only=["48"])
    task = instance_task(q48, 0, [2, 5])
    text = chat_messages(task, ChatStyle(instruction=BENCHMARK_INSTRUCTION))[0]["content"]
    assert text == (
        "Here is a text specification delimited by angle brackets. Create Python code according to the "
        "text specification. The Python code should not contain any comments. The Python code should be "
        f"delimited only by triple backticks. <{task.description}>"
    )
    assert "return_binary_or_hexa(" not in text  # no signature leaks


def test_q48_hex_letters_in_either_case(tmp_path):
    (q48,) = load_benchmark(clone(tmp_path), only=["48"])
    task = instance_task(q48, 0, [2, 50])
    assert task.rules == {"arg_counts": [1], "compare": "upper"}
    lower = task.reference.replace(
        "'A', 11: 'B', 12: 'C', 13: 'D', 14: 'E', 15: 'F'",
        (  # type: ignore[union-attr]
            "'a', 11: 'b', 12: 'c', 13: 'd', 14: 'e', 15: 'f'"
        ),
    )
    assert lower != task.reference
    settings = OracleSettings(inputs=20)
    (judged,) = judge_many([(task, lower, None)], settings)
    assert judged.category == "passed", judged.detail
    cctest_rules = instance_task(q48, 0, [2, 50], harness=False)
    assert judge_many([(cctest_rules, lower, None)], settings)[0].category == "fuzzing_failure"


def _task(reference: str, generator: str, **rules: object) -> Task:
    return Task("t", "d", "f", reference=reference, generator=generator, rules=rules)


def test_order_free_lists_and_matrices():
    gen = "def generate(rng):\n    return (rng.randint(3, 6),)\n"
    ref = "def f(n):\n    return [[i] for i in range(n)]\n"
    rev = "def f(n):\n    return [[i] for i in reversed(range(n))]\n"
    fewer = "def f(n):\n    return [[i] for i in range(n - 1)]\n"
    settings = OracleSettings(inputs=5)
    cats = [
        j.category
        for j in judge_many([(_task(ref, gen, compare="unordered"), a, None) for a in (rev, fewer)], settings)
    ]
    assert cats == ["passed", "fuzzing_failure"]
    assert judge_many([(_task(ref, gen), rev, None)], settings)[0].category == "fuzzing_failure"
    npref = "import numpy as np\ndef f(n):\n    return [np.array([[i, i]]) for i in range(n)]\n"
    nprev = "import numpy as np\ndef f(n):\n    return [np.array([[i, i]]) for i in reversed(range(n))]\n"
    task = _task(npref, gen, compare="unordered_arrays")
    assert judge_many([(task, nprev, None)], settings)[0].category == "passed"


def test_the_argument_count_is_the_harnesss():
    """len(signature(solution).parameters) == len(signature(answer).parameters); Q34: $0 or 1."""
    task = _task("def f(lst):\n    return lst\n", "def generate(rng):\n    return ([1],)\n", arg_counts=[1])
    extra_default = "def f(lst, k=0):\n    return lst\n"
    cats = [j.category for j in judge_many([(task, extra_default, None)], OracleSettings(inputs=2))]
    assert cats == ["wrong_arg_count"]
    loose = Task("t", "d", "f", arity=1, reference=task.reference, generator=task.generator)
    assert judge_many([(loose, extra_default, None)], OracleSettings(inputs=2))[0].category == "passed"
    q34 = turbulence.Template(
        qid="34",
        question="Write a function called 'find_original_set' that takes exactly $0 distinct arguments.",
        solution="def find_original_set(*sets):\n    return set().union(*sets)\n",
        tests="",
        genparams="",
        generator="def input_generator(l, seed):\n    return [{1}, {2}, {3}][: int(l[0])]\n",
    )
    t34 = instance_task(q34, 0, [3])
    assert t34.rules["arg_counts"] == [1, 3]
    three = "def find_original_set(a, b, c):\n    return a | b | c\n"
    two = "def find_original_set(a, b):\n    return a | b\n"
    cats = [j.category for j in judge_many([(t34, a, None) for a in (three, two)], OracleSettings(inputs=3))]
    assert cats == ["passed", "wrong_arg_count"]


def test_static_errors_are_pylints_error_checks():
    task = _task("def f(x):\n    return len(x)\n", "def generate(rng):\n    return ([1],)\n")
    # pyflakes sees nothing; Pylint: too-many-function-args
    answer = "def g(a):\n    return len(a)\n\n\ndef f(x):\n    return g(x, 1)\n"
    assert judge_many([(task, answer, None)], OracleSettings(inputs=2))[0].category == "runtime_error"
    judged = judge_many([(task, answer, None)], OracleSettings(inputs=2, static_check="pylint"))[0]
    assert judged.category == "static_error" and "too-many-function-args" in judged.detail


# the n-th call of f anywhere in the process: the machine is fast for the first call (the
# reference), then slow; or slow only for the answer's call (the second)
_SLOW = """import builtins, time
def f(x):
    n = builtins.__dict__.setdefault("_cctest_calls", [0])
    n[0] += 1
    if n[0] {when}:
        time.sleep(0.6)
    return x
"""


def test_a_correct_answer_is_not_resource_exhaustion_when_its_reference_is_as_slow():
    gen = "def generate(rng):\n    return (1,)\n"
    settings = OracleSettings(inputs=1, input_wall_seconds=0.3, input_cpu_seconds=0.3)
    # the machine slows down after the reference's call: the answer and the reference are run
    # again, the limit doubling while both run past it, and the input is judged, not skipped
    loaded = _task(_SLOW.format(when=">= 2"), gen)
    judged = judge_many([(loaded, _SLOW.format(when=">= 2") + "\n# answer\n", None)], settings)[0]
    assert judged.category == "passed" and (judged.inputs_passed, judged.inputs_skipped) == (1, 0)
    # only the answer's first call is slowed: run again beside the reference, it passes
    once = _task(_SLOW.format(when="== 2"), gen)
    judged = judge_many([(once, _SLOW.format(when="== 2") + "\n# answer\n", None)], settings)[0]
    assert judged.category == "passed" and judged.inputs_passed == 1
    # an answer slow on every run, the reference not: resource_exhaustion
    slow = "import time\ndef f(x):\n    time.sleep(30)\n    return x\n"
    judged = judge_many([(once, slow, None)], settings)[0]
    assert judged.category == "resource_exhaustion"


def test_the_whole_answers_limits_grow_with_its_inputs():
    task = _task("def f(x):\n    return x\n", "def generate(rng):\n    return (1,)\n")
    limits = OracleSettings(inputs=100).process_limits([task])
    assert limits.wall_seconds >= 3 * 100 * 2.0 and limits.cpu_seconds >= 3 * 100 * 1.0
    assert OracleSettings(inputs=0).process_limits([task]).wall_seconds == 60.0


def test_acceptance_every_complete_public_template_is_a_perfect_success(tmp_path):
    """The benchmark's own model solutions as the answers: CorrSc 1.0 and perfect success for every
    complete question; a question lacking a file is named and left out, the rest run."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from turbulence_acceptance import acceptance
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    r = acceptance(clone(tmp_path), instances=6, inputs=3, only=["1", *COMPLETE])
    assert r["corrsc"] == dict.fromkeys((f"Q{q}" for q in COMPLETE), 1.0)
    assert set(r["classes"].values()) == {"perfect_success"}  # type: ignore[attr-defined]
    assert list(r["missing"]) == ["Q1"]  # type: ignore[call-overload]
    assert "solution.py.template" in r["missing"]["Q1"] and "genparams.py" in r["missing"]["Q1"]  # type: ignore[index]
    assert json.dumps(r["skipped_instances"])  # which instances, and why, are said
