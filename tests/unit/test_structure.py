"""Shape rules a maintainer relies on: no classes hidden inside functions, no environment
changes at import."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted([*ROOT.joinpath("cctest").rglob("*.py"), *ROOT.joinpath("lsp_server").rglob("*.py")])


def _trees():
    for path in SOURCES:
        yield path.relative_to(ROOT), ast.parse(path.read_text(encoding="utf-8"))


def test_no_class_is_defined_inside_a_function():
    found = []
    for path, tree in _trees():
        for fn in ast.walk(tree):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found += [f"{path}:{n.lineno}" for n in ast.walk(fn) if isinstance(n, ast.ClassDef)]
    assert found == []


def test_importing_the_backends_changes_no_environment_variable():
    code = (
        "import os; before = dict(os.environ)\n"
        "import cctest.backends.hf, cctest.backends.http, cctest.serve, lsp_server.server\n"
        "print(sorted(set(os.environ.items()) ^ set(before.items())))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]"
