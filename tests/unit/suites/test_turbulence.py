"""The Turbulence suite's loader and templates: a benchmark folder in the public layout (written
here for the tests), the 60 public question templates, and cctest's own templates."""

from __future__ import annotations

import doctest
import json
import os
import random
import re
from pathlib import Path

import pytest

from cctest.errors import ConfigError
from cctest.suites import turbulence, turbulence_metrics
from cctest.suites.turbulence import (
    BUILTIN,
    fill,
    instance_task,
    load_benchmark,
    parameter_rows,
)
from cctest.tasks import OracleSettings, check_reference, judge_many

ROOT = Path(__file__).resolve().parents[3]


def _data_dir() -> Path | None:
    """The public benchmark's question templates (data beside the repository, not in it)."""
    for d in (
        os.environ.get("CCTEST_TURBULENCE_DATA"),
        ROOT.parent / "shared" / "data" / "turbulence",
        Path("/work/shared/data/turbulence"),
    ):
        if d and (Path(d) / "All_questions.json").is_file():
            return Path(d)
    return None


def write_fixture(root: Path) -> Path:
    """A two-question benchmark in the public layout: Q1 with a question file, Q2 without one
    (its text comes from All_questions.json) and without hand-picked rows."""
    b = root / "Benchmark"
    questions = {
        "1": "Write a function called 'take_range' that takes one argument, a list, and returns the "
        "elements from index $0 to index $1, both inclusive.",
        "2": "Write a function called 'times_k' that takes one argument, an integer, and returns it "
        "times $0.",
    }
    (b / "Q1").mkdir(parents=True)
    (b / "Q2").mkdir()
    (b / "All_questions.json").write_text(json.dumps(questions))
    (b / "Q1" / "question.txt.template").write_text(questions["1"])
    (b / "Q1" / "solution.py.template").write_text("def take_range(lst):\n    return lst[$0:$1 + 1]\n")
    (b / "Q1" / "tests.py.template").write_text(
        "from Q1.$4_results_$5.Folder_$2.generated_answer import $3\n\n\n"
        "def test_numbers():\n    assert $3(list(range($1 + 5))) == list(range($0, $1 + 1))\n\n\n"
        "def test_empty():\n    assert $3([]) == []\n"
    )
    (b / "Q1" / "manually_chosen_params.txt").write_text("0 0\n0 1\n3 3\n")
    (b / "Q1" / "genparams.py").write_text(
        "import random\n\n\ndef gen_params(q_no, seed):\n"
        "    if seed != 'default':\n        random.seed(seed)\n"
        "    with open(f'Q{q_no}/manually_chosen_params.txt') as f:\n"
        "        params = [tuple(int(v) for v in line.split()) for line in f if line.strip()]\n"
        "    while len(params) < 10:\n        i = random.randint(0, 20)\n"
        "        row = (i, i + random.randint(0, 5))\n        if row not in params:\n"
        "            params.append(row)\n    return params\n"
    )
    (b / "Q1" / "gen_function_params.py").write_text(
        "import random\n\n\ndef input_generator(l, seed):\n"
        "    if seed != 'default':\n        random.seed(seed)\n"
        "    return [random.randint(-9, 9) for _ in range(l[1] + 3)]\n"
    )
    (b / "Q2" / "solution.py.template").write_text("def times_k(n):\n    return n * $0\n")
    (b / "Q2" / "tests.py.template").write_text(
        "from Q2.$3_results_$4.Folder_$1.generated_answer import $2\n\n\n"
        "def test_one():\n    assert $2(1) == $0\n"
    )
    (b / "Q2" / "genparams.py").write_text(
        "import random\n\n\ndef gen_params(q_no, seed):\n    random.seed(seed)\n"
        "    return random.sample(range(2, 50), 5)\n"
    )
    (b / "Q2" / "gen_function_params.py").write_text(
        "import random\n\n\ndef input_generator(l, seed):\n    random.seed(seed)\n"
        "    return tuple(random.randint(0, 9) for _ in range(3))\n"
    )
    return root


def test_doctests():
    assert doctest.testmod(turbulence).failed == 0
    result = doctest.testmod(turbulence_metrics)
    assert result.failed == 0 and result.attempted >= 15


def test_loader_reads_the_public_layout(tmp_path):
    clone = write_fixture(tmp_path / "clone")
    templates = load_benchmark(clone)  # the clone's root or its Benchmark folder
    assert [t.qid for t in templates] == ["1", "2"]
    assert load_benchmark(clone / "Benchmark", only=["Q2"])[0].qid == "2"
    q1, q2 = templates
    assert q1.name == "take_range" and q1.n_params == 2 and q1.manual.startswith("0 0")
    assert (
        q2.name == "times_k"
        and q2.n_params == 1
        and q2.question.startswith("Write a function called 'times_k'")
    )
    rows = parameter_rows(templates, seed=1)
    assert rows["1"][:3] == [[0, 0], [0, 1], [3, 3]]  # the hand-picked rows first, then random ones
    assert len(rows["1"]) == 10 and len({tuple(r) for r in rows["1"]}) == 10
    assert all(0 <= i <= j for i, j in rows["1"])
    assert len(rows["2"]) == 5 and all(len(r) == 1 for r in rows["2"])  # scalars become rows
    assert rows == parameter_rows(templates, seed=1) and rows != parameter_rows(templates, seed=2)


def test_an_instance_is_a_task_with_the_benchmarks_oracle(tmp_path):
    q1, q2 = load_benchmark(write_fixture(tmp_path))
    task = instance_task(q1, 4, [2, 5])
    assert task.task_id == "Q1/4" and task.name == "take_range" and task.args == ("lst",)
    assert "from index 2 to index 5, both inclusive" in task.description
    assert task.reference == "def take_range(lst):\n    return lst[2:5 + 1]\n"
    assert len(task.tests) == 2 and all("generated_answer" not in t for t in task.tests)
    assert task.tests[0].endswith("test_numbers()\n") and "list(range(2, 5 + 1))" in task.tests[0]
    assert task.meta == {"template": "Q1", "instance": 4, "params": [2, 5]}
    settings = OracleSettings(inputs=20)
    check_reference(task, settings)
    right = "def take_range(lst):\n    return lst[2:6]\n"
    off_by_one = "def take_range(lst):\n    return lst[2:5]\n"  # exclusive upper bound
    wrong_test = "def take_range(lst):\n    return lst[2:6] if lst else [0]\n"
    fuzz_only = "def take_range(lst):\n    return lst[2:6] if all(x >= 0 for x in lst) else []\n"
    answers = (right, off_by_one, wrong_test, fuzz_only)
    cats = [j.category for j in judge_many([(task, a, None) for a in answers], settings)]
    assert cats == ["passed", "assertion_error", "assertion_error", "fuzzing_failure"]
    # a generator returning a tuple gives ONE argument to a one-argument function
    t2 = instance_task(q2, 0, [7])
    ns: dict[str, object] = {}
    exec(t2.generator or "", ns)
    args = ns["generate"](random.Random(0))  # type: ignore[operator]
    assert len(args) == 1 and isinstance(args[0], tuple) and len(args[0]) == 3
    check_reference(t2, settings)


def test_bad_benchmark_folders_are_one_sentence(tmp_path):
    with pytest.raises(ConfigError, match="not a Turbulence benchmark"):
        load_benchmark(tmp_path)
    clone = write_fixture(tmp_path / "c")
    (clone / "Benchmark" / "Q2" / "genparams.py").unlink()
    with pytest.raises(ConfigError, match=r"question 2 .* has no .*genparams\.py"):
        load_benchmark(clone)
    with pytest.raises(ConfigError, match="no question 9"):
        load_benchmark(clone, only=["9"])
    (clone / "Benchmark" / "All_questions.json").write_text("{not json")
    with pytest.raises(ConfigError, match="not valid JSON"):
        load_benchmark(clone)


def test_a_broken_parameter_generator_is_named(tmp_path):
    clone = write_fixture(tmp_path)
    (clone / "Benchmark" / "Q2" / "genparams.py").write_text(
        "def gen_params(q_no, seed):\n    return 1 / 0\n"
    )
    with pytest.raises(ConfigError, match="question 2 .*failed"):
        parameter_rows(load_benchmark(clone), seed=1)


def test_every_public_question_template_is_filled():
    data = _data_dir()
    if data is None:
        pytest.skip("the Turbulence question data (shared/data/turbulence) is not on this machine")
    questions = json.loads((data / "All_questions.json").read_text())
    assert len(questions) == 60
    for qid, text in questions.items():
        used = sorted({int(i) for i in re.findall(r"\$(\d+)", text)})
        assert used == list(range(len(used))) and used, qid  # $0 ... $(k-1), each at least once
        values = [f"<v{i}>" for i in range(len(used))]
        filled = fill(text, values)
        assert not re.search(r"\$\d", filled), qid
        assert all(v in filled for v in values), qid
        with pytest.raises(ConfigError):
            fill(text, values[:-1])


def test_builtin_templates_cover_the_weak_spots_and_each_solution_passes_its_tests_for_every_row():
    templates = load_benchmark(BUILTIN)
    assert len(templates) >= 12
    rows = parameter_rows(templates)
    kinds = {"bounds equal": 0, "lower bound 0": 0, "bounds one apart": 0}
    for t in templates:
        assert len(rows[t.qid]) == 100 and len({json.dumps(r) for r in rows[t.qid]}) == 100
        hand = [line.split() for line in t.manual.splitlines() if line.strip()]
        assert [[str(v) for v in r] for r in rows[t.qid][: len(hand)]] == hand
        for i, row in enumerate(rows[t.qid]):
            task = instance_task(t, i, row)
            assert not re.search(r"\$\d", task.description + (task.reference or "") + "".join(task.tests))
            ns: dict[str, object] = {}
            exec(task.reference or "", ns)
            exec(task.generator or "", ns)
            fn = ns[task.name]
            assert task.tests
            for test in task.tests:
                exec(test, {task.name: fn})  # an AssertionError fails this test
            rng = random.Random(i)
            for _ in range(3):
                fn(*ns["generate"](rng))  # type: ignore[operator, misc]
            ints = [v for v in row if isinstance(v, int)]
            if len(ints) == 2 and ints[0] <= ints[1]:
                kinds["bounds equal"] += ints[0] == ints[1]
                kinds["lower bound 0"] += ints[0] == 0
                kinds["bounds one apart"] += ints[1] == ints[0] + 1
    assert all(n >= 10 for n in kinds.values()), kinds
    # one instance of each through the sandboxed oracle, as a run checks them
    for t in templates:
        check_reference(instance_task(t, 0, rows[t.qid][0]), OracleSettings(inputs=10))
