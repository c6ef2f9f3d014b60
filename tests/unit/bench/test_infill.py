"""``humaneval-infill``: single-line infilling tasks built from HumanEval's canonical solutions,
checked on one known problem, and judged by its tests on prompt + completion + suffix."""

from __future__ import annotations

from cctest.bench.datasets import load_dataset
from cctest.bench.sandbox import Limits, check_program, run_many

SOLUTION_0 = [  # HumanEval/0's canonical solution, line by line (line 6 is blank)
    "    for idx, elem in enumerate(numbers):\n",
    "        for idx2, elem2 in enumerate(numbers):\n",
    "            if idx != idx2:\n",
    "                distance = abs(elem - elem2)\n",
    "                if distance < threshold:\n",
    "                    return True\n",
    "\n",
    "    return False\n",
]


def test_humaneval_infill_masks_each_line_of_a_known_problem() -> None:
    humaneval = {t.task_id: t for t in load_dataset("humaneval").tasks}
    infill = load_dataset("humaneval-infill")
    problem = humaneval["HumanEval/0"]
    assert problem.ground_truth == "".join(SOLUTION_0)
    tasks = [t for t in infill.tasks if t.task_id.startswith("HumanEval/0/")]
    assert [t.task_id for t in tasks] == [f"HumanEval/0/{i}" for i in (0, 1, 2, 3, 4, 5, 7)]  # no blank line
    for task in tasks:
        i = int(task.task_id.rsplit("/", 1)[1])
        line = SOLUTION_0[i]
        indent = line[: len(line) - len(line.lstrip())]
        assert task.prompt == problem.prompt + "".join(SOLUTION_0[:i]) + indent
        assert task.ground_truth == line.strip()
        assert task.suffix == "\n" + "".join(SOLUTION_0[i + 1 :])
        assert task.prompt + task.ground_truth + task.suffix == problem.prompt + problem.ground_truth
        assert task.tests == problem.tests and task.entry_point == "has_close_elements"
    # every problem gives one task per non-blank solution line
    assert len(infill.tasks) == sum(
        sum(1 for ln in (t.ground_truth or "").splitlines() if ln.strip()) for t in humaneval.values()
    )


def test_an_infilled_line_is_judged_by_the_problems_tests() -> None:
    task = next(t for t in load_dataset("humaneval-infill").tasks if t.task_id == "HumanEval/0/3")
    assert task.tests is not None and task.ground_truth is not None
    right = check_program(task.prompt, task.ground_truth + task.suffix, task.tests, task.entry_point)
    wrong = check_program(task.prompt, "distance = elem - elem2" + task.suffix, task.tests, task.entry_point)
    outcomes = run_many([right, wrong], Limits(), workers=1)
    assert [o.outcome for o in outcomes] == ["passed", "assertion_failure"]
