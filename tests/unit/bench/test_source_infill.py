"""``cctest bench --dataset DIR --infill N``: single-line infilling over a source tree. The masked
lines and each task's construction on a small known tree, the seeded sample, and a run end to end
(exact match and edit similarity, original vs repaired) that survives being cut off mid-run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cctest.bench.datasets import load_dataset
from cctest.bench.store import load_run
from cctest.cli import main

A = (
    "import os\n"  # 1
    "\n"
    "\n"
    "def add(a, b):\n"  # 4
    '    """Sum."""\n'  # 5: a docstring, not masked
    "    return a + b\n"  # 6
    "\n"
    "\n"
    "def mul(a, b):\n"  # 9
    "    total = a * b  # product\n"  # 10
    "    return total\n"  # 11
)
B = (
    "x = 1; y = 2\n"  # two statements on one line
    "if x: print(x)\n"  # a compound statement and its body on one line
    "print(\n"  # a statement over two lines
    "    y)\n"
)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "src"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "a.py").write_text(A)
    (root / "pkg" / "b.py").write_text(B)
    (root / "bad.py").write_text("def broken(:\n")
    (root / "notes.txt").write_text("return 1\n")
    return root


def test_the_masked_lines_and_a_known_tasks_construction(tree: Path) -> None:
    dataset = load_dataset(str(tree), infill=100, seed=0)
    # every one-statement line of the tree, in tree order; b.py has none
    assert [t.task_id for t in dataset.tasks] == ["pkg/a.py:1", "pkg/a.py:6", "pkg/a.py:10", "pkg/a.py:11"]
    assert dataset.skipped == {"unparsable_files": 1} and dataset.name == "src-infill"
    task = dataset.tasks[1]
    lines = A.splitlines(keepends=True)
    assert task.prompt == "".join(lines[:5]) + "    "
    assert task.ground_truth == "return a + b"
    assert task.suffix == "\n" + "".join(lines[6:])
    assert task.tests is None
    for t in dataset.tasks:  # prefix + line + suffix is the file again
        assert t.prompt + (t.ground_truth or "") + t.suffix == A
    assert dataset.tasks[2].ground_truth == "total = a * b  # product"


def test_the_sample_is_seeded(tree: Path) -> None:
    runs = [[t.task_id for t in load_dataset(str(tree), infill=2, seed=s).tasks] for s in (0, 0, 1, 2, 3)]
    assert runs[0] == runs[1] and len(runs[0]) == 2
    everything = ["pkg/a.py:1", "pkg/a.py:6", "pkg/a.py:10", "pkg/a.py:11"]
    for ids in runs:  # a subset, in tree order
        assert ids == [i for i in everything if i in ids] and len(ids) == 2
    assert len({tuple(ids) for ids in runs}) > 1  # other seeds draw other lines


def test_a_run_scores_exact_match_and_survives_a_crash(tree: Path) -> None:
    run = tree.parent / "run"
    args = [
        "bench",
        "--dataset",
        str(tree),
        "--infill",
        "100",
        "--backend",
        "rules",
        "-k",
        "2",
        "--thresholds",
        "1",
        "--completion-scope",
        "line",
        "--batch-prompts",
        "1",
        "--out",
        str(run),
        "--no-progress",
    ]
    assert main(args) == 0
    summary = json.loads((run / "summary.json").read_text())
    # the rules backend writes `return a + b` in a function of a and b, `pass` outside one:
    # right at a.py:6 only
    assert summary["exact_match"] == {"original": 0.25, "repaired": {"1": 0.25}}
    assert summary["counts"]["prompts_with_ground_truth"] == 4
    assert 0.25 < summary["edit_similarity"]["original"] < 1
    assert json.loads((run / "config.json").read_text())["infill"] == 100
    _, records = load_run(run)
    assert records[1]["task_id"] == "pkg/a.py:6" and records[1]["completions"][0]["text"].strip() == (
        "return a + b"
    )

    # cut off after the second record, in the middle of writing the third
    results = run / "results.jsonl"
    lines = results.read_text().splitlines(keepends=True)
    results.write_text("".join(lines[:2]) + lines[2][:40])
    (run / "summary.json").unlink()
    assert main([*args, "--resume"]) == 0
    _, resumed = load_run(run)
    assert [r["task_id"] for r in resumed] == [r["task_id"] for r in records]
    assert json.loads((run / "summary.json").read_text())["exact_match"] == summary["exact_match"]


def test_infill_needs_a_directory(tree: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "--dataset", "humaneval", "--infill", "3", "--backend", "rules"]) == 2
    err = capsys.readouterr().err.strip()
    assert "--infill needs --dataset to be a directory" in err and len(err.splitlines()) == 1
