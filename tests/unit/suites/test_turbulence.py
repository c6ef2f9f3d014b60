"""The Turbulence suite's loader and templates: a benchmark folder in the public layout (written
here for the tests), the 60 public question templates, and cctest's own templates."""

from __future__ import annotations

import doctest
import json
import os
import random
import re
import resource
import subprocess
import sys
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
    rows = parameter_rows(templates, seed="1", shuffle=False)
    assert rows["1"][:3] == [[0, 0], [0, 1], [3, 3]]  # the hand-picked rows first, then random ones
    assert len(rows["1"]) == 10 and len({tuple(r) for r in rows["1"]}) == 10
    assert all(0 <= i <= j for i, j in rows["1"])
    assert len(rows["2"]) == 5 and all(len(r) == 1 for r in rows["2"])  # scalars become rows
    same = parameter_rows(templates, seed="1", shuffle=False)
    assert rows == same and rows != parameter_rows(templates, seed="2", shuffle=False)


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
    # cctest's reading (its own templates): a tuple is ONE argument to a one-argument function
    t2 = instance_task(q2, 0, [7], harness=False)
    ns: dict[str, object] = {}
    exec(t2.generator or "", ns)
    args = ns["generate"](random.Random(0))  # type: ignore[operator]
    assert len(args) == 1 and isinstance(args[0], tuple) and len(args[0]) == 3
    check_reference(t2, settings)
    # the harness's (benchmark_test.py): a generated tuple is spread over the arguments
    ns = {}
    exec(instance_task(q2, 0, [7]).generator or "", ns)
    assert len(ns["generate"](random.Random(0))) == 3  # type: ignore[operator]


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
    errors: dict[str, str] = {}  # or it is set aside, and the other templates still get their rows
    rows = parameter_rows(load_benchmark(clone), seed=1, errors=errors)
    assert list(rows) == ["1"] and len(rows["1"]) == 10
    assert list(errors) == ["Q2"] and "ZeroDivisionError" in errors["Q2"]


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
    rows = parameter_rows(templates, shuffle=False, spread_lists=True)
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


# -- the public questions that need NumPy, on the real question data ----------------------------------
#
# The shared data holds the benchmark's question texts (All_questions.json) and three of its files
# of hand-picked rows, not its per-question solution, tests and generators: those below are
# written here for the tests (in the benchmark's layout and parameter numbering), not copied.

NUMPY_SOLUTION = """import numpy as np


def submatrix_with_particular_sum(matrix):
    matrix = np.asmatrix(matrix)
    rows, cols = matrix.shape
    found = []
    for r0 in range(rows):
        for r1 in range(r0 + 1, rows + 1):
            for c0 in range(cols):
                for c1 in range(c0 + 1, cols + 1):
                    if matrix[r0:r1, c0:c1].sum() == $0:
                        found.append(matrix[r0:r1, c0:c1])
    return found
"""
NUMPY_TESTS = """from Q57.$3_results_$4.Folder_$1.generated_answer import $2
import numpy as np


def test_one_integer():
    found = $2(np.asmatrix([[$0]]))
    assert len(found) == 1 and found[0].tolist() == [[$0]]


def test_a_row_and_a_zero():
    assert len($2(np.asmatrix([[$0, 0]]))) == (3 if $0 == 0 else 2)
"""
NUMPY_GENPARAMS = """import numpy as np


def gen_params(q_no, seed):
    with open(f"Q{q_no}/manually_chosen_params.txt") as f:
        params = [int(line) for line in f if line.strip()]
    rng = np.random.default_rng(None if seed == "default" else int(seed))
    while len(params) < 6:
        value = int(rng.integers(-60, 60))
        if value not in params:
            params.append(value)
    return params
"""
NUMPY_INPUTS = """import random

import numpy as np


def input_generator(l, seed):
    if seed != "default":
        random.seed(seed)
    d1, d2 = random.randint(1, 4), random.randint(1, 4)
    return np.asmatrix([[random.randint(-20, 20) for _ in range(d2)] for _ in range(d1)])
"""
# Q11's model solution written with a bug (an exclusive upper bound): its own fixed test fails
BROKEN_SOLUTION = "def find_largest_num(numbers):\n    return max(numbers[$0:$1])\n"
BROKEN_TESTS = (
    "from Q11.$4_results_$5.Folder_$2.generated_answer import $3\n\n\n"
    "def test_last_index_counts():\n"
    "    numbers = [0] * ($1 + 2)\n    numbers[$1] = 1000\n    assert $3(numbers) == 1000\n"
)
PAIR_GENPARAMS = (
    "def gen_params(q_no, seed):\n"
    "    with open(f'Q{q_no}/manually_chosen_params.txt') as f:\n"
    "        return [tuple(int(v) for v in line.split()) for line in f if line.strip()]\n"
)
PAIR_INPUTS = (
    "import random\n\n\ndef input_generator(l, seed):\n    random.seed(seed)\n"
    "    return [random.randint(-99, 99) for _ in range(l[1] + 3)]\n"
)


def _public_data() -> Path:
    data = _data_dir()
    if data is None:
        pytest.skip("the Turbulence question data (shared/data/turbulence) is not on this machine")
    return data


def numpy_clone(root: Path, data: Path) -> Path:
    """A benchmark folder with the real texts of Q57 (a NumPy question) and Q11 and Q11's real
    hand-picked rows; their solution, tests and generators are this file's."""
    questions = json.loads((data / "All_questions.json").read_text())
    b = root / "Benchmark"
    for q, files in {
        "57": (NUMPY_SOLUTION, NUMPY_TESTS, NUMPY_GENPARAMS, NUMPY_INPUTS, "0\n5\n-7\n"),
        "11": (
            BROKEN_SOLUTION,
            BROKEN_TESTS,
            PAIR_GENPARAMS,
            PAIR_INPUTS,
            (data / "manually_chosen_params" / "Q11.txt").read_text(),
        ),
    }.items():
        (b / f"Q{q}").mkdir(parents=True)
        names = (*turbulence.FILES, "manually_chosen_params.txt")
        for name, text in zip(names, files, strict=True):
            (b / f"Q{q}" / name).write_text(text)
    (b / "All_questions.json").write_text(json.dumps({q: questions[q] for q in ("11", "57")}))
    return root


def test_the_public_questions_that_need_numpy_are_57_and_58():
    questions = json.loads((_public_data() / "All_questions.json").read_text())
    assert sorted(q for q, text in questions.items() if "numpy" in text.lower()) == ["57", "58"]
    assert "two-dimensional numpy matrix" in questions["57"] and "numpy matrix" in questions["58"]


def test_a_numpy_question_is_judged_in_the_sandbox(tmp_path):
    """Q57's reference, tests, generators and answers use NumPy, imported read-only from cctest's
    own environment in the sandbox: the reference passes its checks, answers are judged."""
    from cctest.tasks.run import check_tasks

    q11, q57 = load_benchmark(numpy_clone(tmp_path, _public_data()))
    assert q57.name == "submatrix_with_particular_sum" and "numpy matrix" in q57.question
    rows = parameter_rows([q11, q57], seed="1", shuffle=False)
    assert rows["57"][:3] == [[0], [5], [-7]] and len(rows["57"]) == 6  # NumPy in genparams.py too
    assert rows["11"][:2] == [[0, 1], [0, 2]] and len(rows["11"]) == 20  # the benchmark's own rows
    settings = OracleSettings(inputs=20)
    tasks = [instance_task(q57, i, row) for i, row in enumerate(rows["57"][:3])]
    assert check_tasks(tasks, settings, skip_broken=turbulence.template_of) == {}
    assert check_reference(tasks[1], settings).inputs_passed == 20
    right = NUMPY_SOLUTION.replace("$0", "5")
    with_at_least = right.replace(".sum() == 5", ".sum() >= 5")
    cats = [j.category for j in judge_many([(tasks[1], a, None) for a in (right, with_at_least)], settings)]
    assert cats == ["passed", "fuzzing_failure"]  # its fixed tests pass; lists of matrices differ
    # Q11's reference fails its own test: a run would skip Q11, naming it
    broken = check_tasks([instance_task(q11, 0, rows["11"][0])], settings, skip_broken=turbulence.template_of)
    assert list(broken) == ["Q11"] and "the reference fails its own checks" in broken["Q11"]


def test_a_run_on_the_numpy_clone_skips_the_broken_template_and_judges_the_rest(tmp_path, caplog):
    """``cctest bench turbulence --benchmark DIR`` runs to the end: Q11 (its reference fails its own
    test) is skipped with one sentence and listed as skipped; Q57 (NumPy) is judged."""
    from cctest.cli import main

    data = _public_data()
    clone = numpy_clone(tmp_path / "clone", data)
    # Q35 (real text): a parameter generator that needs a package cctest's environment lacks
    q35 = clone / "Benchmark" / "Q35"
    q35.mkdir()
    for name, text in zip(
        turbulence.FILES,
        (
            "def remove_repeat_chars(s):\n    return s\n",
            "def test_nothing():\n    pass\n",
            "import not_an_installed_package\n\n\ndef gen_params(q_no, seed):\n    return [(0, 1)]\n",
            PAIR_INPUTS,
        ),
        strict=True,
    ):
        (q35 / name).write_text(text)
    index = clone / "Benchmark" / "All_questions.json"
    texts = json.loads((data / "All_questions.json").read_text())
    index.write_text(json.dumps({**json.loads(index.read_text()), "35": texts["35"]}))
    run = tmp_path / "run"
    argv = ["bench", "turbulence", "--benchmark", str(clone), "--instances", "3", "--rounds", "1"]
    with caplog.at_level("WARNING"):
        code = main([*argv, "--inputs", "10", "--backend", "rules", "--no-progress", "--out", str(run)])
    assert code == 0
    said = [r.getMessage() for r in caplog.records if "skipping" in r.getMessage()]
    assert len(said) == 4  # Q35 as a whole, and each of Q11's three instances on its own
    assert said[0].startswith("cctest bench turbulence: skipping Q35; the parameter generator of question 35")
    assert "ModuleNotFoundError" in said[0]
    assert all(
        s.startswith(f"cctest bench turbulence: skipping Q11/{i}; task 'Q11/{i}'")
        for i, s in enumerate(said[1:])
    )
    summary = json.loads((run / "summary.json").read_text())
    assert list(summary["corrsc"]) == ["Q57"] and summary["counts"]["answers"] == 3
    assert summary["skipped"]["Q11/0"]["tasks"] == 1 and summary["skipped"]["Q35"]["tasks"] == 0
    assert "fails its own checks" in summary["skipped"]["Q11/2"]["reason"]
    html = (run / "report.html").read_text()
    assert "Skipped, and why" in html and "Q11" in html


# -- hostile benchmark folders: sizes, paths, generators -----------------------------------------------


def _bounded(*args: str) -> subprocess.CompletedProcess[str]:
    """``cctest ARGS`` with at most 120 s and 2 GiB of address space (a runaway read hits either)."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    cctest = Path(sys.executable).parent / "cctest"
    return subprocess.run(
        [str(cctest), *args], capture_output=True, text=True, timeout=120, preexec_fn=limit, cwd=ROOT
    )


def _one_sentence(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("cctest: ") and lines[0].endswith("."), stderr
    return lines[0]


def test_the_public_benchmarks_files_are_far_within_the_bounds():
    data = _public_data()
    index = (data / "All_questions.json").read_bytes()
    assert 16 * len(index) < turbulence.MAX_INDEX_BYTES
    assert all(16 * len(t.encode()) < turbulence.MAX_QUESTION_BYTES for t in json.loads(index).values())
    sizes = {p.name: p.stat().st_size for p in (data / "Benchmark").rglob("*") if p.is_file()}
    assert sizes and 16 * max(sizes.values()) < turbulence.MAX_QUESTION_BYTES < turbulence.MAX_TEMPLATE_BYTES
    assert all(_KEY_OK.fullmatch(k) for k in json.loads(index))


_KEY_OK = re.compile(r"[A-Za-z0-9_-]{1,64}")


def test_a_200_mb_question_is_one_sentence_before_any_model_work(tmp_path):
    """A sparse 200 MB question.txt.template: refused by its size, not read (without the bound,
    a run of three instances takes gigabytes and writes a results.jsonl of hundreds of MB)."""
    clone = write_fixture(tmp_path / "clone")
    os.truncate(clone / "Benchmark" / "Q1" / "question.txt.template", 200 << 20)
    run = tmp_path / "run"
    r = _bounded(
        "bench", "turbulence", "--benchmark", str(clone), "--instances", "3", "--rounds", "1",
        "--inputs", "5", "--backend", "rules", "--no-progress", "--out", str(run),
    )  # fmt: skip
    assert r.returncode == 2
    said = _one_sentence(r.stderr)
    assert "question.txt.template is larger than 64 KiB, the limit for a question" in said
    assert not (run / "results.jsonl").exists()


@pytest.mark.parametrize(
    ("name", "limit", "what"),
    [
        ("All_questions.json", turbulence.MAX_INDEX_BYTES, "question index"),
        ("Q2/solution.py.template", turbulence.MAX_TEMPLATE_BYTES, "template file (solution.py.template)"),
        ("Q2/tests.py.template", turbulence.MAX_TEMPLATE_BYTES, "template file (tests.py.template)"),
        ("Q2/genparams.py", turbulence.MAX_TEMPLATE_BYTES, "template file (genparams.py)"),
        (
            "Q2/gen_function_params.py",
            turbulence.MAX_TEMPLATE_BYTES,
            "template file (gen_function_params.py)",
        ),
        ("Q1/manually_chosen_params.txt", turbulence.MAX_TEMPLATE_BYTES, "hand-picked rows file"),
        ("Q1/question.txt.template", turbulence.MAX_QUESTION_BYTES, "question"),
    ],
)
def test_every_file_the_loader_reads_is_bounded(tmp_path, name, limit, what):
    clone = write_fixture(tmp_path)
    path = clone / "Benchmark" / name
    with path.open("a") as f:  # still valid text: only its size is wrong
        f.write("\n#" + "x" * limit)
    with pytest.raises(ConfigError, match=re.escape(f"the limit for a {what}")):
        load_benchmark(clone)


def test_a_question_text_in_the_index_is_bounded_too(tmp_path):
    clone = write_fixture(tmp_path)
    index = clone / "Benchmark" / "All_questions.json"
    questions = json.loads(index.read_text())
    index.write_text(json.dumps({**questions, "2": questions["2"] + " " * turbulence.MAX_QUESTION_BYTES}))
    with pytest.raises(
        ConfigError, match=r"question 2 of .* is larger than 64 KiB, the limit for a question\."
    ):
        load_benchmark(clone)


def test_a_special_file_in_the_benchmark_is_refused_without_waiting(tmp_path):
    clone = write_fixture(tmp_path)
    os.mkfifo(clone / "Benchmark" / "Q1" / "manually_chosen_params.txt.fifo")
    manual = clone / "Benchmark" / "Q1" / "manually_chosen_params.txt"
    manual.unlink()
    manual.symlink_to("manually_chosen_params.txt.fifo")  # inside the folder: allowed, but a pipe
    with pytest.raises(ConfigError, match="is not a regular file"):
        load_benchmark(clone)
    question = clone / "Benchmark" / "Q1" / "question.txt.template"
    question.unlink()
    os.mkfifo(question)  # an optional file that is a pipe is refused, not taken as absent
    with pytest.raises(ConfigError, match="is not a regular file"):
        load_benchmark(clone, only=["1"])


def test_parameter_values_cannot_blow_a_question_or_its_rows_up(tmp_path):
    """A generator's rows are bounded (1 MiB as JSON), and so is each instance's filled question:
    a template over either bound is skipped with one sentence; the other template still runs."""
    clone = write_fixture(tmp_path)
    genparams = clone / "Benchmark" / "Q2" / "genparams.py"
    genparams.write_text("def gen_params(q_no, seed):\n    return [('7' * 70000,)]\n")
    errors: dict[str, str] = {}
    tasks = turbulence.build_tasks(load_benchmark(clone), 3, seed=1, errors=errors)
    assert {t.meta["template"] for t in tasks} == {"Q1"} and len(tasks) == 3
    assert errors == {
        "Q2": "question 2's question filled with parameter row 0 is longer than 64 KiB (in characters), "
        "its limit."
    }
    genparams.write_text("def gen_params(q_no, seed):\n    return [(7,)] * 400000\n")
    errors.clear()
    assert list(parameter_rows(load_benchmark(clone), seed=1, errors=errors)) == ["1"]
    assert "its parameter rows take more than 1048576 bytes as JSON" in errors["Q2"]


@pytest.mark.parametrize("key", ["/../../secret", "../secret", "/abs", "a/b", "a\\b", "", "1\x00", "." * 3])
def test_a_question_key_that_is_a_path_is_refused(tmp_path, key):
    """A key names the folder Q<key>: with a path in it, the loader read templates from outside
    the benchmark folder (``/../../secret`` made it read ``<benchmark>/../secret``)."""
    clone = write_fixture(tmp_path / "clone")
    b = clone / "Benchmark"
    (b / "Q").mkdir()
    secret = clone / "secret"
    secret.mkdir()
    for name in turbulence.FILES:
        (secret / name).write_text((b / "Q2" / name).read_text())
    index = b / "All_questions.json"
    index.write_text(json.dumps({**json.loads(index.read_text()), key: "Write a function called 'times_k'."}))
    with pytest.raises(
        ConfigError, match=re.escape(f"has the question key {key!r}, which is not a plain name")
    ):
        load_benchmark(clone)


def test_no_symbolic_link_leads_out_of_the_benchmark_folder(tmp_path):
    clone = write_fixture(tmp_path / "clone")
    b = clone / "Benchmark"
    outside = tmp_path / "outside"
    outside.mkdir()
    for name in turbulence.FILES:
        (outside / name).write_text((b / "Q2" / name).read_text())
    inside = (b / "Q2" / "genparams.py").read_text()
    # a file of the folder that links to a file elsewhere
    (b / "Q2" / "genparams.py").unlink()
    (b / "Q2" / "genparams.py").symlink_to(outside / "genparams.py")
    with pytest.raises(ConfigError, match=r"genparams\.py leads outside the benchmark folder"):
        load_benchmark(clone)
    # a question folder that links to a folder elsewhere
    (b / "Q2" / "genparams.py").unlink()
    (b / "Q2" / "genparams.py").write_text(inside)
    os.rename(b / "Q2", tmp_path / "Q2-away")
    (b / "Q2").symlink_to(outside)
    with pytest.raises(ConfigError, match=r"Q2/solution\.py\.template leads outside the benchmark folder"):
        load_benchmark(clone)
    # the index itself, linked to one elsewhere
    (b / "Q2").unlink()
    os.rename(tmp_path / "Q2-away", b / "Q2")
    (outside / "All_questions.json").write_text((b / "All_questions.json").read_text())
    (b / "All_questions.json").unlink()
    (b / "All_questions.json").symlink_to(outside / "All_questions.json")
    with pytest.raises(ConfigError, match=r"All_questions\.json leads outside the benchmark folder"):
        load_benchmark(clone)
    # a link that stays inside the folder is followed
    (b / "All_questions.json").unlink()
    (b / "All_questions.json").write_text((outside / "All_questions.json").read_text())
    (b / "Q2" / "gen_function_params.py").unlink()
    (b / "Q2" / "gen_function_params.py").symlink_to(b / "Q1" / "gen_function_params.py")
    assert load_benchmark(clone)[1].generator == (b / "Q1" / "gen_function_params.py").read_text()


def test_each_parameter_generator_is_judged_on_its_own(tmp_path, monkeypatch, caplog):
    """Q1's genparams.py ends the process at import (``os._exit``), Q2's sleeps past the limit,
    Q3's calls ``sys.exit``: each is skipped naming itself, and Q4 after them is loaded and run.
    (Run in one shared process, the first of them took every template after it down.)"""
    from cctest.bench.sandbox import Limits
    from cctest.cli import main

    monkeypatch.setattr(turbulence, "GENPARAMS_LIMITS", Limits(wall_seconds=5, cpu_seconds=5))
    fixture = write_fixture(tmp_path / "fixture") / "Benchmark"
    b = tmp_path / "clone" / "Benchmark"
    questions = json.loads((fixture / "All_questions.json").read_text())
    bad = {
        "1": "import os\nos._exit(0)\n\n\ndef gen_params(q_no, seed):\n    return [(3,)]\n",
        "2": "import time\n\n\ndef gen_params(q_no, seed):\n    time.sleep(600)\n    return [(3,)]\n",
        "3": "import sys\n\n\ndef gen_params(q_no, seed):\n    sys.exit(0)\n",
    }
    for q in ("1", "2", "3", "4"):
        (b / f"Q{q}").mkdir(parents=True)
        for name in turbulence.FILES:
            (b / f"Q{q}" / name).write_text((fixture / "Q2" / name).read_text())
        if q in bad:
            (b / f"Q{q}" / "genparams.py").write_text(bad[q])
        (b / f"Q{q}" / "gen_function_params.py").write_text("def input_generator(l, seed):\n    return 4\n")
    (b / "All_questions.json").write_text(json.dumps(dict.fromkeys(("1", "2", "3", "4"), questions["2"])))
    run = tmp_path / "run"
    argv = ["bench", "turbulence", "--benchmark", str(b), "--instances", "2", "--rounds", "1"]
    with caplog.at_level("WARNING"):
        code = main([*argv, "--inputs", "5", "--backend", "rules", "--no-progress", "--out", str(run)])
    assert code == 0
    said = sorted(r.getMessage() for r in caplog.records if "skipping" in r.getMessage())
    prefix = (
        "cctest bench turbulence: skipping Q{0}; "
        "the parameter generator of question {0} (genparams.py) failed: "
    )
    assert said == [
        prefix.format(1) + "it ended without giving rows (exit status 0).",
        prefix.format(2) + "it ended without giving rows (wall-clock limit of 5 s).",
        prefix.format(3) + "SystemExit: 0.",
    ]
    summary = json.loads((run / "summary.json").read_text())
    assert list(summary["corrsc"]) == ["Q4"] and summary["counts"]["answers"] == 2
    assert sorted(summary["skipped"]) == ["Q1", "Q2", "Q3"]
