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
                found.append(f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', 0)}: {name}")
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


def _internal_imports(package: Path) -> dict[str, list[tuple[str, list[str]]]]:
    """Every import of ``package`` (a folder of cctest) by its own modules, function-level ones
    included: module -> [(imported module, names imported from it)], modules named by dotted path."""
    top = ".".join(package.relative_to(ROOT).parts)
    modules = {
        ".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__"): p
        for p in package.rglob("*.py")
    }
    out: dict[str, list[tuple[str, list[str]]]] = {}
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        found: list[tuple[str, list[str]]] = []
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found += [(a.name, []) for a in node.names if a.name in modules]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = name.split(".")[: len(name.split(".")) - node.level + (1 if is_package else 0)]
                    target = ".".join([*base, *([node.module] if node.module else [])])
                else:
                    target = node.module or ""
                if not target.startswith(top):
                    continue
                submodules = [n.name for n in node.names if f"{target}.{n.name}" in modules]
                names = [n.name for n in node.names if n.name not in submodules]
                if target in modules and names:  # not only 'from . import submodule'
                    found.append((target, names))
                found += [(f"{target}.{n}", []) for n in submodules]
        out[name] = found
    return out


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import cycles of ``graph`` (one path per strongly connected part of more than one node
    or with a self-import)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    parts: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                part.append(w)
                if w == v:
                    break
            if len(part) > 1 or v in graph.get(v, ()):
                parts.append(sorted(part))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return parts


MUTATORS = ROOT / "cctest" / "mutators"


def test_the_mutators_import_one_way() -> None:
    """No import cycle among cctest/mutators' modules, counting imports inside functions (a
    package's ``__init__`` is a façade that no module of it imports)."""
    imports = _internal_imports(MUTATORS)
    graph = {m: {t for t, _ in found if t != "cctest.mutators" or m == t} for m, found in imports.items()}
    assert _cycles(graph) == []
    assert [m for m, found in imports.items() if any(t == "cctest.mutators" for t, _ in found)] == []


def test_no_mutators_module_imports_a_private_name_of_another() -> None:
    found = [
        f"{m} imports {t}.{n}"
        for m, imports in _internal_imports(MUTATORS).items()
        for t, names in imports
        for n in names
        if n.startswith("_") and not n.startswith("__")
    ]
    assert found == []


def test_the_import_checks_see_cycles_and_function_level_imports(tmp_path: Path) -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []
    imports = _internal_imports(MUTATORS)
    # generate imports from doc at module level, and formula's own modules load lazily in form
    assert any(t == "cctest.mutators.doc" for t, _ in imports["cctest.mutators.generate"])
    assert "cctest.mutators.registry" in {t for t, _ in imports["cctest.mutators.selection"]}
