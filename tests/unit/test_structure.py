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


def _private_imports(path: Path) -> list[str]:
    """Imports in ``path`` of a third-party library's private part: a name after the top package
    that starts with ``_`` (``libcst._nodes``, ``from libcst import _x``)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        modules: list[str] = []
        if isinstance(node, ast.Import):
            modules = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules = [f"{node.module}.{a.name}" for a in node.names if a.name != "*"]
        for name in modules:
            top, *rest = name.split(".")
            if top in ("cctest", "lsp_server") or top in sys.stdlib_module_names:
                continue
            if any(part.startswith("_") and not part.startswith("__") for part in rest):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {name}")
    return found


def test_no_module_imports_a_private_part_of_a_library():
    found = [hit for path in SOURCES for hit in _private_imports(path)]
    assert found == []


def test_no_two_test_modules_share_a_name():
    """pytest imports test modules by basename (the test folders are not packages), so a second
    ``test_x.py`` anywhere stops collection of the whole suite."""
    seen: dict[str, list[str]] = {}
    for path in ROOT.joinpath("tests").rglob("test_*.py"):
        seen.setdefault(path.name, []).append(str(path.relative_to(ROOT)))
    assert {name: paths for name, paths in seen.items() if len(paths) > 1} == {}
