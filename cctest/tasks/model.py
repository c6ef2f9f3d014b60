"""The task model: a natural-language coding task and a task set loaded from JSONL.

A ``Task`` asks for one Python function: a ``description`` in words, the function's ``name``, its
argument names (``args``) or at least their number (``arity``) when known, and what judges an
answer: a ``reference`` solution with an input ``generator`` (random differential testing), and/or
fixed ``tests``. A suite builds tasks in code; a file holds one JSON object per line with the same
fields::

    {"task_id": "add", "description": "Return the sum of a and b.", "name": "add",
     "args": ["a", "b"], "reference": "def add(a, b):\\n    return a + b\\n",
     "generator": "def generate(rng):\\n    return (rng.randint(-9, 9), rng.randint(-9, 9))\\n",
     "tests": ["assert add(1, 2) == 3"], "abs_tol": null, "rel_tol": null, "meta": {}}

``generator`` is Python source defining ``generate(rng)``, which returns the positional arguments
of one call (a tuple or list) drawn from ``rng`` (a seeded ``random.Random``). ``tests`` are
Python snippets (asserts) that see the candidate under ``name``. ``abs_tol``/``rel_tol`` override
the oracle's float tolerance for this task. ``meta`` is free-form JSON a suite carries through a
run (question id, variant, distance, ...).
"""

from __future__ import annotations

import json
import keyword
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..errors import TaskError
from ..userfile import MAX_DATA_BYTES, load_json, read_user_lines

FIELDS = (
    "task_id",
    "description",
    "name",
    "args",
    "arity",
    "reference",
    "generator",
    "tests",
    "abs_tol",
    "rel_tol",
    "meta",
    "rules",
)

# The judging rules a task may set (``Task.rules``), beside the oracle's defaults:
#   "arg_counts": [n, ...]  the function must declare exactly one of these numbers of parameters,
#                           counted as ``inspect.signature`` counts them (every kind), in place of
#                           "callable with ``arity`` positional arguments";
#   "compare": how a generated input's result is compared with the reference's:
#       "ordered" (default: ``==``, element by element), "upper" (two strings equal once upper-cased),
#       "unordered" (a list equal to the reference's as a multiset), "unordered_arrays" (a list of
#       NumPy arrays equal as a multiset of their ``tolist()``).
COMPARE_RULES = ("ordered", "upper", "unordered", "unordered_arrays")


@dataclass(frozen=True)
class Task:
    """One natural-language coding task: write the function ``name``."""

    task_id: str
    description: str
    name: str
    args: tuple[str, ...] | None = None  # argument names, when the signature is known
    arity: int | None = None  # number of arguments; len(args) when args are given
    reference: str | None = None  # source defining ``name``: the model solution
    generator: str | None = None  # source defining ``generate(rng) -> tuple of arguments``
    tests: tuple[str, ...] = ()  # fixed tests: snippets (asserts) calling ``name``
    abs_tol: float | None = None  # None: the oracle's setting
    rel_tol: float | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)
    rules: Mapping[str, Any] = field(default_factory=dict)  # see COMPARE_RULES above

    def __post_init__(self) -> None:
        where = f"task '{self.task_id}'"
        if not isinstance(self.task_id, str) or not self.task_id:
            raise TaskError("a task needs a task_id (a non-empty string).")
        if not isinstance(self.description, str) or not self.description.strip():
            raise TaskError(f"{where} needs a description (a non-empty string).")
        if not isinstance(self.name, str) or not self.name.isidentifier() or keyword.iskeyword(self.name):
            raise TaskError(f"{where} needs a name that is a Python identifier (got {self.name!r}).")
        if self.args is not None:
            if not all(isinstance(a, str) and a.isidentifier() for a in self.args):
                raise TaskError(f"{where}: args must be Python identifiers.")
            if self.arity is not None and self.arity != len(self.args):
                raise TaskError(f"{where}: arity {self.arity} does not match {len(self.args)} args.")
            object.__setattr__(self, "arity", len(self.args))
        if self.arity is not None and (
            not isinstance(self.arity, int) or isinstance(self.arity, bool) or self.arity < 0
        ):
            raise TaskError(f"{where}: arity must be an integer >= 0.")
        if self.reference is None and not self.tests:
            raise TaskError(f"{where} has nothing to judge an answer by: give a reference or tests.")
        if self.generator is not None and self.reference is None:
            raise TaskError(f"{where} has a generator but no reference to compare against.")
        for tol in ("abs_tol", "rel_tol"):
            value = getattr(self, tol)
            if value is not None and (not isinstance(value, (int, float)) or value < 0):
                raise TaskError(f"{where}: {tol} must be a number >= 0.")
        unknown = sorted(set(self.rules) - {"arg_counts", "compare"})
        if unknown:
            raise TaskError(f"{where}: unknown rules {', '.join(unknown)} (known: arg_counts, compare).")
        if self.rules.get("compare", "ordered") not in COMPARE_RULES:
            raise TaskError(f"{where}: rule compare must be one of {', '.join(COMPARE_RULES)}.")
        counts = self.rules.get("arg_counts")
        if counts is not None and (
            not isinstance(counts, (list, tuple))
            or not counts
            or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in counts)
        ):
            raise TaskError(f"{where}: rule arg_counts must be a non-empty list of integers >= 0.")

    @property
    def signature(self) -> str | None:
        """``name(a, b)`` when the argument names are known."""
        return None if self.args is None else f"{self.name}({', '.join(self.args)})"

    def replace(self, **changes: Any) -> Task:
        """A copy with some fields changed (a suite's variant of a task)."""
        if "args" in changes and "arity" not in changes:
            changes["arity"] = None
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return {
            "task_id": self.task_id,
            "description": self.description,
            "name": self.name,
            "args": None if self.args is None else list(self.args),
            "arity": self.arity,
            "reference": self.reference,
            "generator": self.generator,
            "tests": list(self.tests),
            "abs_tol": self.abs_tol,
            "rel_tol": self.rel_tol,
            "meta": dict(self.meta),
            **({"rules": dict(self.rules)} if self.rules else {}),
        }

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any], *, where: str = "a task") -> Task:
        """A task from its JSON form; a missing or mistyped field is a ``TaskError`` naming ``where``."""
        unknown = sorted(set(obj) - set(FIELDS))
        if unknown:
            raise TaskError(f"{where} has unknown fields ({', '.join(unknown)}); known: {', '.join(FIELDS)}.")
        for key in ("task_id", "description", "name"):
            if not isinstance(obj.get(key), str) or not obj[key].strip():
                raise TaskError(f"{where} has no '{key}' (a non-empty string).")
        for key in ("reference", "generator"):
            if obj.get(key) is not None and not isinstance(obj[key], str):
                raise TaskError(f"{where}: '{key}' must be a string of Python source.")
        args = obj.get("args")
        if args is not None and (not isinstance(args, list) or not all(isinstance(a, str) for a in args)):
            raise TaskError(f"{where}: 'args' must be a list of argument names.")
        tests = obj.get("tests") or []
        if isinstance(tests, str):
            tests = [tests]
        if not isinstance(tests, list) or not all(isinstance(t, str) for t in tests):
            raise TaskError(f"{where}: 'tests' must be a list of Python snippets (or one string).")
        meta = obj.get("meta") or {}
        if not isinstance(meta, dict):
            raise TaskError(f"{where}: 'meta' must be a JSON object.")
        rules = obj.get("rules") or {}
        if not isinstance(rules, dict):
            raise TaskError(f"{where}: 'rules' must be a JSON object.")
        try:
            return cls(
                task_id=obj["task_id"],
                description=obj["description"],
                name=obj["name"],
                args=None if args is None else tuple(args),
                arity=obj.get("arity"),
                reference=obj.get("reference"),
                generator=obj.get("generator"),
                tests=tuple(tests),
                abs_tol=obj.get("abs_tol"),
                rel_tol=obj.get("rel_tol"),
                meta=meta,
                rules=rules,
            )
        except TaskError as exc:
            raise TaskError(f"{where}: {exc}") from None


@dataclass(frozen=True)
class TaskSet:
    """Tasks as a suite or a file gives them, with where they came from: ``source`` (a file's
    path, ``humaneval``, a suite's name or benchmark folder) and the ``settings`` that built them
    (a suite's template numbers, equations, ...), both recorded in a run's config."""

    tasks: list[Task]
    source: str
    settings: Mapping[str, Any] = field(default_factory=dict)


def load_tasks(path: str | Path) -> list[Task]:
    """The tasks of a JSONL file (``.jsonl`` or ``.jsonl.gz``), in file order.

    Every problem is a ``TaskError`` naming the file and line: unreadable file, a line that is not
    a JSON object, a missing or mistyped field, a repeated ``task_id``, no task at all.
    """
    path = Path(path).expanduser()
    if not os.path.lexists(path):
        raise TaskError(f"task file {path} does not exist.")
    lines = read_user_lines(
        path, limit=MAX_DATA_BYTES, what="task file (.jsonl)", error=TaskError, skip_blank=True
    )
    objects: list[tuple[str, Any]] = []
    for number, line in lines:  # one line in memory at a time, each within MAX_LINE_BYTES
        where = f"{path} line {number}"
        try:
            objects.append((where, load_json(line)))
        except json.JSONDecodeError as exc:
            raise TaskError(f"{where} is not valid JSON ({exc.msg}).") from None
    tasks = tasks_from_dicts(objects)
    if not tasks:
        raise TaskError(f"{path} holds no tasks.")
    return tasks


def tasks_from_dicts(objects: Iterable[tuple[str, Any]]) -> list[Task]:
    """Tasks from ``(where, JSON object)`` pairs; ``where`` names each one in error messages."""
    tasks: list[Task] = []
    seen: set[str] = set()
    for where, obj in objects:
        if not isinstance(obj, dict):
            raise TaskError(f"{where} is not a JSON object.")
        task = Task.from_dict(obj, where=where)
        if task.task_id in seen:
            raise TaskError(f"{where} repeats task_id '{task.task_id}'.")
        seen.add(task.task_id)
        tasks.append(task)
    return tasks


def write_tasks(path: str | Path, tasks: Iterable[Task]) -> None:
    """Write tasks as JSONL (the format ``load_tasks`` reads)."""
    with open(Path(path), "w", encoding="utf-8") as f:
        for task in tasks:
            f.write(json.dumps(task.to_dict(), ensure_ascii=False) + "\n")
