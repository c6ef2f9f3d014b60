"""Behaviour preservation: every scheme, applied to a whole module at every site, keeps its tests green.

The corpus (tests/data/corpus/*.py) is a set of modules, each holding code under mutation, a marker
line, and that code's own checks. For every module and every scheme in ``SCHEMES`` this file mutates
the code with ``mutate_whole``, loads the original and the mutant as fresh modules, runs the same
checks against both, and compares what they observe: the return value (compared structurally, so that
nan, -0.0, 1 vs 1.0 vs True and list identity all count), the exception type and message (a message
may name a renamed identifier, which is mapped back), and everything written to stdout. INI may only
add output: the original's stdout lines must be a subsequence of the mutant's.

The same comparison runs on prompt mutants (``generate_mutants`` on the text before a cursor placed
after each function and class, completed by the rest of the module), and on real code: standard-
library modules mutated whole, compared on hypothesis-generated calls and by CPython's own test
suites for them.

A check that could not tell a broken mutant from a good one would prove nothing, so
``test_harness_catches_the_slides_unsafe_rewrites`` feeds the harness the slides' own unsafe rewrites
and asserts that it reports them.
"""

from __future__ import annotations

import ast
import contextlib
import copy
import functools
import importlib.util
import io
import linecache
import re
import sys
import sysconfig
import tokenize
import types
import unittest
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cctest.mutators import DEFAULT_SCHEMES, SCHEMES, MutationOutcome, generate_mutants, mutate_whole
from cctest.types import Mutant

CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"


def _load_registry() -> types.ModuleType:
    """The corpus's checks import their registry as ``_checks``; load it by path rather than put the
    corpus on sys.path, where its modules could shadow the standard library's."""
    if "_checks" not in sys.modules:
        spec = importlib.util.spec_from_file_location("_checks", CORPUS / "_checks.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["_checks"] = module
        spec.loader.exec_module(module)
    return sys.modules["_checks"]


_registry = _load_registry()
MARKER: str = _registry.MARKER
Checks: type = _registry.Checks

MODULES = sorted(p.stem for p in CORPUS.glob("*.py") if not p.name.startswith("_"))
SCHEME_NAMES = list(SCHEMES)
MAX_EXAMPLES = 30  # per property, module and scheme: modest, the corpus's breadth matters more


# --------------------------------------------------------------------------------------------------
# loading the corpus


@functools.cache
def parts(name: str) -> tuple[str, str]:
    """(code under mutation, checks) of one corpus module; the checks are padded with blank lines so
    that their line numbers in tracebacks are those of the file."""
    text = (CORPUS / f"{name}.py").read_text(encoding="utf-8")
    code, marker, rest = text.partition(MARKER + "\n")
    assert marker, f"corpus module {name} lacks the line {MARKER!r}"
    return code, "\n" * code.count("\n") + marker + rest


@functools.cache
def checks_of(name: str) -> Checks:
    namespace: dict[str, Any] = {"__name__": f"corpus_checks_{name}"}
    exec(compile(parts(name)[1], str(CORPUS / f"{name}.py"), "exec"), namespace)
    checks = namespace["checks"]
    assert isinstance(checks, Checks)
    return checks


@functools.cache
def mutated(name: str, scheme: str) -> Mutant:
    # the checks call the code (by keyword too): they are part of the program REP must see
    return mutate_whole(parts(name)[0], scheme, context=parts(name)[1])


def source_of(name: str, scheme: str | None) -> str:
    return parts(name)[0] if scheme is None else mutated(name, scheme).text


@functools.cache
def compiled(name: str, scheme: str | None) -> tuple[types.CodeType, str]:
    source = source_of(name, scheme)
    filename = f"<corpus {name} {scheme or 'original'}>"
    # keep the source findable, so that a failing mutant's traceback shows its lines
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    return compile(source, filename, "exec"), filename


@contextlib.contextmanager
def executed(code: types.CodeType, module_name: str) -> Iterator[tuple[types.ModuleType, Observation]]:
    """A fresh module executed from ``code``, and what its execution observed (output at import,
    an exception at import)."""
    module = types.ModuleType(module_name)
    # dataclasses and friends look their module up in sys.modules while the class is created
    sys.modules[module_name] = module
    try:
        yield module, observe(lambda: exec(code, module.__dict__), renames={})
    finally:
        del sys.modules[module_name]


def loaded(
    name: str, scheme: str | None
) -> contextlib.AbstractContextManager[tuple[types.ModuleType, Observation]]:
    """The original (scheme None) or whole-file mutated code of a corpus module, executed afresh."""
    return executed(compiled(name, scheme)[0], f"corpus_{name}_{scheme or 'original'}")


# --------------------------------------------------------------------------------------------------
# observing and comparing


@dataclass(frozen=True)
class Observation:
    outcome: str  # "returned" or "raised"
    value: Any  # canonical form of the return value, or (exception type, message)
    stdout: str


def canon(value: Any, depth: int = 0, seen: frozenset[int] = frozenset()) -> Any:
    """A comparable, hashable rendering of a value that keeps what == would lose: the type (1, 1.0
    and True differ), nan and the sign of zero (via repr), and the state of objects (which live in
    two different modules and so are never == across them)."""
    if depth > 12:
        return ("...",)
    if id(value) in seen and not isinstance(value, (int, float, str, bytes, bool, type(None))):
        return ("cycle", type(value).__qualname__)
    seen = seen | {id(value)}
    tname = type(value).__qualname__
    if value is None or isinstance(value, (bool, int, str, bytes)):
        return (tname, value)
    if isinstance(value, (float, complex)):
        return (tname, repr(value))
    if isinstance(value, (list, tuple)):
        return (tname, tuple(canon(v, depth + 1, seen) for v in value))
    if isinstance(value, bytearray):
        return (tname, bytes(value))
    if isinstance(value, Mapping):
        return (
            tname,
            tuple((canon(k, depth + 1, seen), canon(v, depth + 1, seen)) for k, v in value.items()),
        )
    if isinstance(value, (set, frozenset)):
        return (tname, tuple(sorted((canon(v, depth + 1, seen) for v in value), key=repr)))
    if isinstance(value, type):
        return ("type", value.__qualname__)
    if isinstance(
        value, (types.FunctionType, types.BuiltinFunctionType, types.MethodType, functools.partial)
    ):
        return ("callable", getattr(value, "__qualname__", tname))
    if isinstance(value, (types.GeneratorType, types.CoroutineType, types.AsyncGeneratorType)):
        return ("generator", value.__qualname__)
    if isinstance(value, BaseException):
        return ("exception", tname, str(value))
    state: dict[str, Any] = {}
    if hasattr(value, "__dict__"):
        state.update(vars(value))
    for slot in getattr(type(value), "__slots__", ()):
        if hasattr(value, slot):
            state[slot] = getattr(value, slot)
    if state:
        return (tname, canon(state, depth + 1, seen))
    # builtins without inspectable state (Decimal, Fraction, range, ...): their repr, minus addresses
    return (tname, re.sub(r"0x[0-9a-fA-F]+", "0x?", repr(value)))


def map_back(text: str, renames: Mapping[str, str]) -> str:
    """A message that names a renamed identifier ("local variable 'LocalVar1' ...") reads as the
    original would."""
    for new, old in renames.items():
        text = re.sub(rf"(?<!\w){re.escape(new)}(?!\w)", old, text)
    return text


def observe(thunk: Callable[[], Any], renames: Mapping[str, str]) -> Observation:
    buf = io.StringIO()
    try:
        with contextlib.redirect_stdout(buf):
            result = thunk()
            value = canon(result)
        return Observation("returned", value, buf.getvalue())
    except Exception as exc:  # the behaviour under test includes raising
        return Observation("raised", (type(exc).__qualname__, map_back(str(exc), renames)), buf.getvalue())


def is_subsequence(needles: list[str], haystack: list[str]) -> bool:
    it = iter(haystack)
    return all(any(n == h for h in it) for n in needles)


def differences(scheme: str, original: Observation, mutant: Observation) -> list[str]:
    """What differs between the original's and the mutant's observation, in words (empty: same)."""
    found = []
    if (original.outcome, original.value) != (mutant.outcome, mutant.value):
        found.append(
            f"original {original.outcome} {original.value!r}\n   mutant {mutant.outcome} {mutant.value!r}"
        )
    if scheme == "INI":
        # INI may add lines, never drop, change or reorder the program's own
        if not is_subsequence(original.stdout.split("\n"), mutant.stdout.split("\n")):
            found.append(
                f"the original's output is not kept in order:\n{original.stdout!r}\nvs {mutant.stdout!r}"
            )
    elif original.stdout != mutant.stdout:
        found.append(f"stdout differs:\n{original.stdout!r}\nvs {mutant.stdout!r}")
    return found


def run_case_in(
    name: str, code: types.CodeType, module_name: str, renames: Mapping[str, str], case: str
) -> Observation:
    """One case of the module's checks against a fresh module executed from ``code``."""
    fn = checks_of(name).cases[case]
    with executed(code, module_name) as (module, at_import):
        if at_import.outcome == "raised":
            return Observation("raised at import", at_import.value, at_import.stdout)
        result = observe(lambda: fn(module), renames)
        return Observation(result.outcome, result.value, at_import.stdout + result.stdout)


def run_case(name: str, scheme: str | None, case: str) -> Observation:
    """One case of the module's checks against the original (scheme None) or whole-file mutant."""
    if scheme is None:
        return original_case(name, case)
    renames = dict(mutated(name, scheme).renames)
    return run_case_in(name, compiled(name, scheme)[0], f"corpus_{name}_{scheme}", renames, case)


@functools.cache
def original_case(name: str, case: str) -> Observation:
    """The original's observation, made once: test_corpus_checks_are_deterministic shows that a
    second run would observe the same."""
    return run_case_in(name, compiled(name, None)[0], f"corpus_{name}_original", {}, case)


def describe(name: str, scheme: str) -> str:
    m = mutated(name, scheme)
    return f"mutant of {name} by {scheme} (renames {dict(m.renames)}):\n{m.text}"


# --------------------------------------------------------------------------------------------------
# the tests

MODULE_SCHEMES = [(n, s) for n in MODULES for s in SCHEME_NAMES]
PROPERTIES = [(n, s, p) for n in MODULES for p in checks_of(n).properties for s in SCHEME_NAMES]


def unchanged(name: str, scheme: str) -> bool:
    """Whether the scheme left the module as it was (then it behaves the same, trivially)."""
    m = mutated(name, scheme)
    if m.text == parts(name)[0]:
        assert not m.renames, f"{scheme} reports renames {dict(m.renames)} but changed nothing"
        return True
    return False


def test_corpus_is_broad():
    """The corpus promises many varied functions: count them (methods and nested functions too)."""
    functions = 0
    for name in MODULES:
        tree = ast.parse(parts(name)[0])
        functions += sum(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) for n in ast.walk(tree))
    assert len(MODULES) >= 10
    assert functions >= 60
    assert sum(len(checks_of(n).cases) for n in MODULES) >= 80


@pytest.mark.parametrize("name", MODULES)
def test_corpus_checks_are_deterministic(name):
    """Two fresh loads of the original observe the same things, so a difference is the mutant's."""
    for case in checks_of(name).cases:
        first = run_case_in(name, compiled(name, None)[0], f"corpus_{name}_original", {}, case)
        second = run_case_in(name, compiled(name, None)[0], f"corpus_{name}_original", {}, case)
        assert first == second, case


@pytest.mark.parametrize("name,scheme", MODULE_SCHEMES)
def test_cases_survive_mutation(name, scheme):
    """Every case of the module observes the same on the original and on the scheme's mutant."""
    if unchanged(name, scheme):
        return
    failures = []
    for case in checks_of(name).cases:
        found = differences(scheme, run_case(name, None, case), run_case(name, scheme, case))
        if found:
            failures.append(f"{name}.{case} under {scheme}:\n" + "\n".join(found))
    assert not failures, "\n\n".join(failures) + "\n\n" + describe(name, scheme)


@pytest.mark.parametrize("name,scheme,prop", PROPERTIES)
def test_property_survives_mutation(name, scheme, prop):
    if unchanged(name, scheme):
        return
    strategy, fn = checks_of(name).properties[prop]
    renames = dict(mutated(name, scheme).renames)
    with loaded(name, None) as (original, _), loaded(name, scheme) as (mutant, at_import):
        assert at_import.outcome == "returned", f"the mutant fails at import: {at_import.value}"

        @settings(
            max_examples=MAX_EXAMPLES,
            deadline=None,
            derandomize=True,  # the same inputs on every run and machine
            database=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        )
        @given(strategy)
        def same_behaviour(x: Any) -> None:
            # each side gets its own copy: the functions may mutate their input
            o = observe(lambda: fn(original, copy.deepcopy(x)), {})
            m = observe(lambda: fn(mutant, copy.deepcopy(x)), renames)
            found = differences(scheme, o, m)
            assert not found, f"{name}.{prop}({x!r}) under {scheme}:\n" + "\n".join(found)

        same_behaviour()


@pytest.mark.parametrize("scheme", SCHEME_NAMES)
def test_scheme_applies_somewhere_in_the_corpus(scheme):
    """A scheme that never changes anything would pass every behaviour test vacuously."""
    changed = [n for n in MODULES if mutated(n, scheme).text != parts(n)[0]]
    assert changed, f"{scheme} changed none of {MODULES}"


def identifiers(source: str) -> set[str]:
    return {
        t.string for t in tokenize.generate_tokens(io.StringIO(source).readline) if t.type == tokenize.NAME
    }


@pytest.mark.parametrize("name,scheme", [(n, s) for n in MODULES for s in SCHEME_NAMES])
def test_mutant_is_well_formed(name, scheme):
    m = mutated(name, scheme)
    original = parts(name)[0]
    assert m.scheme == scheme
    compile(m.text, f"<{name} {scheme}>", "exec")  # parses and compiles
    before, after = identifiers(original), identifiers(m.text)
    for new, old in m.renames.items():
        assert new in after, f"{scheme} reports renaming {old} to {new}, which is not in the mutant"
        assert new not in before, f"{scheme} invented {new}, which the module already uses"
        assert old in before, f"{scheme} reports renaming {old}, which the module does not use"


def tabified(source: str) -> str:
    """The same code indented with tabs (four leading spaces -> one tab)."""
    out = []
    for line in source.splitlines(keepends=True):
        indent = re.match(r"(?: {4})*", line).group(0)  # type: ignore[union-attr]
        out.append("\t" * (len(indent) // 4) + line[len(indent) :])
    return "".join(out)


TAB_MODULES = ["lists", "control", "conditions"]


@pytest.mark.parametrize("scheme", SCHEME_NAMES)
def test_tab_indented_modules_survive_mutation(scheme):
    """Inserted and rewritten lines follow a tab-indented file's indentation (spaces would be a
    TabError) and the module still behaves the same."""
    failures = []
    for name in TAB_MODULES:
        source = tabified(parts(name)[0])
        m = mutate_whole(source, scheme, context=parts(name)[1])
        code = compile(m.text, f"<tab-indented {name} {scheme}>", "exec")
        for case in checks_of(name).cases:
            mutant = run_case_in(name, code, f"corpus_{name}_tabs_{scheme}", m.renames, case)
            found = differences(scheme, run_case(name, None, case), mutant)
            if found:
                failures.append(f"{name}.{case}: " + "; ".join(found))
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("scheme", ["REP_R", "REP_C"])
def test_rep_renames_ordinary_parameters_but_not_those_the_checks_pass_by_keyword(scheme):
    """The behaviour tests above are not vacuous for REP on ordinary parameters, and the names the
    program passes by keyword ('parameters' corpus: the checks, a recursion, '**', a partial)
    stay; the checks are REP's context, as a test file would be for ``cctest mutate --whole``."""
    renamed = set(mutated("parameters", scheme).renames.values())
    assert {"value", "low", "high", "text", "n", "owner", "balance", "amount", "other"} <= renamed
    assert not renamed & {"width", "fill", "acc", "first", "second", "base", "exponent", "self"}
    # without the checks as context, pad's keyword callers are invisible and its names would go
    alone = set(mutate_whole(parts("parameters")[0], scheme).renames.values())
    assert {"width", "fill"} <= alone


# --------------------------------------------------------------------------------------------------
# prompt mutants: the cursor right after a function, the rest of the module after it


def function_ends(name: str) -> dict[str, int]:
    """Every function, class and method of a corpus module, by qualified name: the offset just after
    its last line, where an editor's cursor sits when it has just been written."""
    code = parts(name)[0]
    line_starts = [0]
    for line in code.splitlines(keepends=True):
        line_starts.append(line_starts[-1] + len(line))
    out = {}
    for node in ast.parse(code).body:
        for inner in [node, *(node.body if isinstance(node, ast.ClassDef) else [])]:
            if isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and inner.end_lineno:
                qualified = inner.name if inner is node else f"{node.name}.{inner.name}"
                out[qualified] = line_starts[inner.end_lineno]
    return out


@functools.cache
def prompt_outcome(name: str, function: str) -> MutationOutcome:
    code = parts(name)[0]
    end = function_ends(name)[function]
    # as an editor would: the code after the cursor (and the checks) is the context
    return generate_mutants(code[:end], k=10, context=code[end:] + parts(name)[1])


PROMPT_POSITIONS = [(n, f) for n in MODULES for f in function_ends(n)]


@pytest.mark.parametrize("name,function", PROMPT_POSITIONS)
def test_prompt_mutants_keep_behaviour(name, function):
    """What the model sees is a mutant of the text before the cursor; completed by the rest of the
    real module, every such mutant (kept or dropped) must pass the module's checks like the original."""
    code = parts(name)[0]
    rest = code[function_ends(name)[function] :]
    outcome = prompt_outcome(name, function)
    failures = []
    for i, m in enumerate([*outcome.mutants, *outcome.dropped]):
        source = m.text + rest
        filename = f"<corpus {name} prompt mutant {i} {m.scheme} after {function}>"
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        try:
            code_obj = compile(source, filename, "exec")
        except SyntaxError as exc:
            failures.append(
                f"{m.scheme}: the mutant followed by the rest of the module does not compile: {exc}"
            )
            continue
        for case in checks_of(name).cases:
            original = run_case(name, None, case)
            mutant = run_case_in(name, code_obj, f"corpus_{name}_prompt_{i}", m.renames, case)
            found = differences(m.scheme, original, mutant)
            if found:
                failures.append(f"{m.scheme} renames {dict(m.renames)}: {case}: " + "; ".join(found))
    assert not failures, f"{name}, cursor after {function}:\n" + "\n".join(failures)


def test_prompt_mutants_cover_every_scheme():
    """Mutants at the ends of the corpus's functions come from every scheme: the test above is not
    vacuous for any of them."""
    seen = {m.scheme for n, f in PROMPT_POSITIONS for m in prompt_outcome(n, f).mutants}
    assert seen == set(DEFAULT_SCHEMES), f"never produced: {sorted(set(DEFAULT_SCHEMES) - seen)}"


# --------------------------------------------------------------------------------------------------
# real code: standard-library modules mutated whole, compared on generated inputs

STDLIB = Path(sysconfig.get_paths()["stdlib"])
_text = st.text(alphabet=st.sampled_from(list("ab cD-\t\n'\"\\é.,;")), max_size=60)
_unit = st.floats(min_value=0.0, max_value=1.0)
_any_float = st.floats(allow_nan=True, allow_infinity=True)
STDLIB_CALLS: dict[str, Any] = {
    "textwrap": st.one_of(
        st.tuples(st.just("wrap"), st.tuples(_text), st.fixed_dictionaries({"width": st.integers(1, 30)})),
        st.tuples(
            st.just("fill"),
            st.tuples(_text),
            st.fixed_dictionaries(
                {
                    "width": st.integers(1, 30),
                    "initial_indent": st.sampled_from(["", "> "]),
                    "break_long_words": st.booleans(),
                    "drop_whitespace": st.booleans(),
                }
            ),
        ),
        st.tuples(st.just("shorten"), st.tuples(_text, st.integers(1, 40)), st.just({})),
        st.tuples(st.just("dedent"), st.tuples(_text), st.just({})),
        st.tuples(st.just("indent"), st.tuples(_text, st.sampled_from(["  ", "# "])), st.just({})),
    ),
    "shlex": st.one_of(
        st.tuples(st.just("split"), st.tuples(_text), st.fixed_dictionaries({"posix": st.booleans()})),
        st.tuples(st.just("quote"), st.tuples(_text), st.just({})),
        st.tuples(st.just("join"), st.tuples(st.lists(_text, max_size=4)), st.just({})),
    ),
    "colorsys": st.tuples(
        st.sampled_from(["rgb_to_hsv", "hsv_to_rgb", "rgb_to_hls", "hls_to_rgb", "rgb_to_yiq", "yiq_to_rgb"]),
        st.one_of(st.tuples(_unit, _unit, _unit), st.tuples(_any_float, _any_float, _any_float)),
        st.just({}),
    ),
}


@functools.cache
def stdlib_source(module: str) -> str:
    return (STDLIB / f"{module}.py").read_text(encoding="utf-8")


def stdlib_context(module: str) -> str:
    """What calls the module from outside in these tests: CPython's test suite for it, and the
    keyword arguments of the generated calls (written as calls, the way REP's scan reads them)."""
    suite = STDLIB / "test" / f"test_{module}.py"
    text = suite.read_text(encoding="utf-8") if suite.exists() else ""
    strategy = repr(STDLIB_CALLS.get(module, ""))
    return text + "".join(f"\nf({k}=0)" for k in re.findall(r"'(\w+)':", strategy))


@functools.cache
def stdlib_mutant(module: str, scheme: str) -> Mutant:
    return mutate_whole(stdlib_source(module), scheme, context=stdlib_context(module))


@pytest.mark.parametrize("module,scheme", [(m, s) for m in STDLIB_CALLS for s in SCHEME_NAMES])
def test_stdlib_module_survives_mutation(module, scheme):
    """Real code the corpus's author did not write: textwrap, shlex and colorsys, each mutated whole
    by each scheme, must answer every generated call exactly as the original does."""
    m = stdlib_mutant(module, scheme)
    original_code = compile(stdlib_source(module), str(STDLIB / f"{module}.py"), "exec")
    filename = f"<{module} mutated by {scheme}>"
    linecache.cache[filename] = (len(m.text), None, m.text.splitlines(True), filename)
    with executed(original_code, f"stdlib_{module}_original") as (original, _):
        with executed(compile(m.text, filename, "exec"), f"stdlib_{module}_{scheme}") as (mutant, at_import):
            assert at_import.outcome == "returned", f"the mutant fails at import: {at_import.value}"

            @settings(
                max_examples=MAX_EXAMPLES * 2,
                deadline=None,
                derandomize=True,
                database=None,
                suppress_health_check=[HealthCheck.too_slow],
            )
            @given(STDLIB_CALLS[module])
            def same_answers(call: tuple[str, tuple[Any, ...], dict[str, Any]]) -> None:
                fn, args, kwargs = call
                o = observe(lambda: getattr(original, fn)(*args, **kwargs), {})
                mu = observe(lambda: getattr(mutant, fn)(*args, **kwargs), m.renames)
                found = differences(scheme, o, mu)
                assert not found, f"{module}.{fn}(*{args!r}, **{kwargs!r}) under {scheme}:\n" + "\n".join(
                    found
                )

            same_answers()


# modules whose CPython tests import them by name (heapq's and bisect's bypass sys.modules)
STDLIB_SUITES = {
    module: f"test.test_{module}"
    for module in ("textwrap", "shlex", "colorsys", "fnmatch", "fractions", "string")
}


def run_stdlib_suite(module: str, implementation: types.ModuleType) -> tuple[int, set[str]]:
    """CPython's own unittest suite for ``module``, run with ``implementation`` in its place:
    (tests run, ids of the tests that failed or errored)."""
    suite_name = STDLIB_SUITES[module]
    saved_module, saved_suite = sys.modules.get(module), sys.modules.pop(suite_name, None)
    sys.modules[module] = implementation
    try:
        suite = importlib.import_module(suite_name)  # binds the names it imports from the module now
        result = unittest.TestResult()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            unittest.defaultTestLoader.loadTestsFromModule(suite).run(result)
    finally:
        if saved_module is not None:
            sys.modules[module] = saved_module
        sys.modules.pop(suite_name, None)
        if saved_suite is not None:
            sys.modules[suite_name] = saved_suite
    return result.testsRun, {test.id() for test, _ in (*result.failures, *result.errors)}


@pytest.mark.parametrize("module,scheme", [(m, s) for m in STDLIB_SUITES for s in SCHEME_NAMES])
def test_stdlib_own_test_suite_passes_on_the_mutant(module, scheme):
    """What ``cctest mutate FILE --whole`` is for: a module's own test suite, run against each
    scheme's mutant of it, fails exactly where it fails on the original (nowhere, normally)."""
    pytest.importorskip(STDLIB_SUITES[module], reason="this Python was installed without its test package")
    original = importlib.import_module(module)
    m = stdlib_mutant(module, scheme)
    filename = f"<{module} mutated by {scheme}>"
    linecache.cache[filename] = (len(m.text), None, m.text.splitlines(True), filename)
    mutant = types.ModuleType(module)
    mutant.__file__ = original.__file__
    exec(compile(m.text, filename, "exec"), mutant.__dict__)
    ran_original, failed_original = run_stdlib_suite(module, original)
    ran_mutant, failed_mutant = run_stdlib_suite(module, mutant)
    assert ran_mutant == ran_original >= 5
    assert failed_mutant == failed_original, (
        f"fail only on the {scheme} mutant: {sorted(failed_mutant - failed_original)}"
    )


def test_stdlib_modules_are_really_mutated():
    """The stdlib test above is not vacuous: most schemes change each of those modules."""
    for module in STDLIB_CALLS:
        changed = [s for s in SCHEME_NAMES if stdlib_mutant(module, s).text != stdlib_source(module)]
        assert len(changed) >= 5, (module, changed)


# --------------------------------------------------------------------------------------------------
# the harness itself can fail


def hand_mutant(name: str, scheme: str, old: str, new: str) -> Mutant:
    code = parts(name)[0]
    assert code.count(old) == 1, old
    return Mutant(scheme=scheme, text=code.replace(old, new))


@pytest.mark.parametrize(
    "name,scheme,old,new,case",
    [
        # the slides' IRR: a += b -> a = a + b, wrong for an aliased list
        (
            "lists",
            "IRR",
            "    a += b\n    return a\n\n\ndef concat",
            "    a = a + b\n    return a\n\n\ndef concat",
            "extend_aliases_caller_list",
        ),
        # the slides' RTF: if ignore: -> if ignore == (b == b):, wrong for ignore = 5
        ("conditions", "RTF", "    if ignore:\n", "    if ignore == (b == b):\n", "pick_over_odd_values"),
        # a parameter renamed without its keyword callers
        (
            "signatures",
            "REP_R",
            "def area(width, height=1):\n    return width * height",
            "def area(Param1, height=1):\n    return Param1 * height",
            "keyword_calls",
        ),
        # a print inserted into a module that defines its own print
        (
            "shadowing",
            "INI",
            "    n = len(items)\n",
            "    print(items)\n    n = len(items)\n",
            "shadowed_builtins",
        ),
        # a rename onto a global the function reads
        (
            "shadowing",
            "REL_R",
            "    result = a + b\n    return result,",
            "    Param1 = a + b\n    return Param1,",
            "fresh_name_collisions",
        ),
    ],
)
def test_harness_catches_the_slides_unsafe_rewrites(name, scheme, old, new, case):
    bad = hand_mutant(name, scheme, old, new)
    code = compile(bad.text, f"<hand-made {scheme} mutant of {name}>", "exec")
    mutant = run_case_in(name, code, f"corpus_{name}_hand_made", bad.renames, case)
    found = differences(scheme, run_case(name, None, case), mutant)
    assert found, f"the harness did not notice the unsafe rewrite {old!r} -> {new!r}"


def test_harness_compares_what_equality_hides():
    assert canon(0.0) != canon(-0.0)
    assert canon(1) != canon(1.0) != canon(True)
    assert canon(float("nan")) == canon(float("nan"))
    assert canon([1, [2]]) != canon((1, [2]))
    assert is_subsequence(["a", "b"], ["x", "a", "y", "b"])
    assert not is_subsequence(["b", "a"], ["a", "b"])
