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


def test_the_import_checks_see_cycles_and_function_level_imports() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []
    imports = _internal_imports(MUTATORS)
    # the imports the mutators' modules make of each other are found, at any depth
    assert any(t == "cctest.mutators.doc" for t, _ in imports["cctest.mutators.generate"])
    assert "cctest.mutators.registry" in {t for t, _ in imports["cctest.mutators.selection"]}


# -- imports between the package's own modules ----------------------------------------------------


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in SOURCES}


def _imports(module: str) -> list[tuple[int, str, str | None]]:
    """Every import in ``module`` of a module of the package, at any depth (inside functions and
    ``if TYPE_CHECKING:`` too): (line, the module imported, the name taken from it or None)."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[tuple[int, str, str | None]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name, None) for a in node.names if a.name in MODULES]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            if source not in MODULES:
                continue
            for a in node.names:
                sub = f"{source}.{a.name}"
                # ``from . import x`` with x a module imports that module, else a name of the package
                found.append((node.lineno, sub, None) if sub in MODULES else (node.lineno, source, a.name))
    return found


def import_cycles(modules: set[str]) -> list[list[str]]:
    """The import cycles among ``modules`` (each once, as a path that returns to its start)."""
    graph = {
        m: sorted({target for _, target, _ in _imports(m) if target in modules and target != m})
        for m in modules
    }
    cycles: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the path, 2: done
    path: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        path.append(m)
        for n in graph[m]:
            if state.get(n) == 1:
                cycles.append([*path[path.index(n) :], n])
            elif n not in state:
                visit(n)
        path.pop()
        state[m] = 2

    for m in sorted(modules):
        if m not in state:
            visit(m)
    return cycles


def private_imports(modules: set[str]) -> list[str]:
    """Imports in ``modules`` of a private name of another module of the package (``from .hf import
    _Model``), or of a private module from outside the package that holds it (the engine
    importing ``cctest.backends._stop``): a private name is its module's, a private module its
    package's."""
    found = []
    for module in sorted(modules):
        package = module if MODULES[module].name == "__init__.py" else module.rpartition(".")[0]
        for line, target, name in _imports(module):
            where = f"{MODULES[module].relative_to(ROOT)}:{line}"
            if name is not None and name.startswith("_") and not name.startswith("__"):
                found.append(f"{where}: {name} from {target}")
            parts = target.split(".")
            for i, part in enumerate(parts):
                owner = ".".join(parts[:i])
                if (
                    part.startswith("_")
                    and not part.startswith("__")
                    and not (package + ".").startswith(owner + ".")
                ):
                    found.append(f"{where}: {target}, private to {owner}")
                    break
    return found


def test_no_import_cycle_in_the_package() -> None:
    """cctest and lsp_server import one way, imports inside functions and TYPE_CHECKING counted."""
    assert import_cycles(set(MODULES)) == []


def test_no_module_imports_a_private_name_of_another_module() -> None:
    assert private_imports(set(MODULES)) == []


def benchmark_private_imports(paths: list[Path]) -> list[str]:
    """Imports in the scripts ``paths`` of a private name of a cctest module (``from
    cctest.backends._prefix_attention import _cascade``); a benchmark may time a private module's
    public function, as its package's own modules call it."""
    found = []
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            module = (node.module or "") if isinstance(node, ast.ImportFrom) else ""
            if isinstance(node, ast.ImportFrom) and not node.level and module.split(".")[0] == "cctest":
                found += [
                    f"{path.name}:{node.lineno}: {a.name} from {node.module}"
                    for a in node.names
                    if a.name.startswith("_") and not a.name.startswith("__")
                ]
    return found


def test_no_benchmark_imports_a_private_name_of_cctest() -> None:
    assert benchmark_private_imports(sorted(ROOT.joinpath("benchmarks").glob("*.py"))) == []


def test_the_structure_checks_find_what_they_look_for(tmp_path: Path) -> None:
    """The checks themselves, on the package's known shape: a module imports its own package's
    private modules freely (hf.py and ``_encode``), and a cycle is found where there is one."""
    assert any(t == "cctest.backends._encode" for _, t, _ in _imports("cctest.backends.hf"))
    assert private_imports({"cctest.backends.hf"}) == []
    assert import_cycles({"cctest.backends", "cctest.backends.hf", "cctest.backends.base"}) == []
    # imports inside functions count: bench_tasks runs in the run directory of bench_dir
    assert any(t == "cctest.commands.bench_dir" for _, t, _ in _imports("cctest.commands.bench_tasks"))
    script = tmp_path / "b.py"
    script.write_text("def f():\n    from cctest.tasks.oracle import _x, judge_many\n")
    hits = benchmark_private_imports([script])
    assert [hit.split(": ", 1)[1] for hit in hits] == ["_x from cctest.tasks.oracle"]
