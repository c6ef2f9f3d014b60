"""Robustness and coverage of prompt mutation on real and hostile text before a cursor.

Coverage. Cursor positions are sampled (fixed seed) uniformly over the characters of real files from
the standard library, the prompt being the text before the position. A position *counts* for the
coverage target when it lies inside a function body: on a line from the first statement of a
``def``'s body to the end of that ``def`` (up to its last character on its last line), nested
functions and classes within included, docstrings and string literals included, blank and comment
lines included. That is where an editor's cursor usually is when code is completed, and where every
scheme has something to work with (parameters, locals, statements to guard or print around).
Positions at module or class level are sampled too and must never fail, and their coverage is
reported, but it is not asserted: with no function in the window a module-level prompt may
legitimately have nothing that a behaviour-preserving scheme can touch.

Every mutant returned is checked, at every position, against what a mutant promises:

- its text differs from the prompt;
- an invented name (a rename's new name, or GRA's dead variable) occurs nowhere in the prompt as an
  identifier, and a rename's old name does;
- the unfinished last line keeps its structure: mapped back with ``cctest.demutate.demutate`` it is
  the prompt's last line, character for character;
- where the prompt's analysis window (``cctest.context.find_window``) parses, the mutant's
  corresponding window (the mutant minus the untouched head and the renamed tail) parses too;
- where the prompt followed by the rest of the real file parses, so does the mutant followed by the
  same rest: the mutation never leaves the model a prefix that no real file could continue.

Hostile inputs (empty, comments only, syntax errors, tabs, unicode identifiers, 10k-char lines, deep
brackets, unterminated strings, CRLF, a 3000-line prompt, NUL bytes, random text) must never raise.
"""

from __future__ import annotations

import ast
import bisect
import contextlib
import itertools
import logging
import random
import re
import sysconfig
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cctest.context import STUB_COMMENT, Window, find_window
from cctest.demutate import demutate, rename
from cctest.mutators import DEFAULT_SCHEMES, SCHEMES, generate_mutants
from cctest.mutators.doc import open_docstring_tails
from cctest.types import Mutant

STDLIB = Path(sysconfig.get_paths()["stdlib"])
# varied real code: parsers, data structures, numerics, async, text processing, metaprogramming;
# all plain modules in every Python from 3.10 on
FILES = [
    "argparse.py",
    "json/decoder.py",
    "json/encoder.py",
    "textwrap.py",
    "difflib.py",
    "ast.py",
    "dataclasses.py",
    "enum.py",
    "functools.py",
    "heapq.py",
    "calendar.py",
    "csv.py",
    "shlex.py",
    "fractions.py",
    "statistics.py",
    "pprint.py",
    "asyncio/tasks.py",
    "email/utils.py",
    "tokenize.py",
    "configparser.py",
    "gettext.py",
]
POSITIONS_PER_FILE = 30
CORPUS = Path(__file__).resolve().parents[2] / "data" / "corpus"
CORPUS_MARKER = "# ==== CHECKS (never mutated) ===="
CORPUS_POSITIONS_PER_FILE = 12
SEED = 20230514  # ICSE 2023
K = 10
TARGET = 0.95


def last_line(text: str) -> str:
    return text[text.rfind("\n") + 1 :]


def occurs_as_identifier(name: str, text: str) -> bool:
    return re.search(rf"(?<!\w){re.escape(name)}(?!\w)", text) is not None


def parses(source: str) -> bool:
    try:
        ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


_UNSET: Any = object()


def mutant_problems(
    prompt: str, m: Mutant, file: RealFile | None = None, window: Window | None = _UNSET
) -> list[str]:
    """Every promise the mutant ``m`` of ``prompt`` breaks (see the module docstring). ``window`` is
    ``find_window(prompt)``, passed in when the caller has it already."""
    problems = []
    if m.scheme not in SCHEMES:
        problems.append(f"unknown scheme {m.scheme!r}")
    if m.text == prompt:
        problems.append("the mutant is the prompt")
    for new, old in m.renames.items():
        if occurs_as_identifier(new, prompt):
            problems.append(f"invented name {new!r} already occurs in the prompt")
        if not occurs_as_identifier(old, prompt):
            problems.append(f"renamed {old!r} does not occur in the prompt")
    for new in m.introduced:
        if occurs_as_identifier(new, prompt):
            problems.append(f"introduced name {new!r} already occurs in the prompt")
    if STUB_COMMENT in m.text and STUB_COMMENT not in prompt:
        problems.append("the analysis stub leaked into the mutant")
    if demutate(last_line(m.text), m.renames) != last_line(prompt):
        problems.append(f"the last line changed: {last_line(prompt)!r} -> {last_line(m.text)!r}")
    w = find_window(prompt) if window is _UNSET else window
    if w is not None and parses(w.source):
        # renames reach the unfinished tail only when it continues the window's function, and then
        # only those of the variables in the tail's scope (not a nested function's): any subset
        tails = [w.tail]
        if w.tail_in_scope:
            inverse = [(old, new) for new, old in m.renames.items()][:4]
            subsets = itertools.chain.from_iterable(
                itertools.combinations(inverse, r) for r in range(1, len(inverse) + 1)
            )
            tails += [rename(w.tail, dict(sub)) for sub in subsets]
        if m.scheme == "DOC":  # DOC's edits of a docstring being typed, above the cursor's line
            tails += open_docstring_tails(w.tail)
        tail = next((t for t in tails if m.text.endswith(t)), None)
        if not m.text.startswith(w.head):
            problems.append("the text before the window changed")
        elif tail is None:
            problems.append(f"the unfinished tail changed beyond renaming: {w.tail!r}")
        else:
            body = m.text[len(w.head) : len(m.text) - len(tail)]
            if not parses(w.wrapper + body + w.stub):
                problems.append(f"the mutated window does not parse:\n{w.wrapper + body + w.stub}")
    if file is not None and not file.continues(m.text, len(prompt)):
        problems.append("the mutant, followed by the rest of the file, no longer parses")
    return problems


class RealFile:
    """A parsable file, and a test of whether a mutant of a prefix of it can be continued by the rest.

    Parsing the whole mutated file per mutant would dominate the test's time, so only the innermost
    definition (``def``/``class``, with its decorators) that holds the cursor and before which the
    mutant and the file agree is parsed, from its first line to its end, under ``if 1:`` when it is
    indented. Outside every definition, the top-level statements from the last one before which the
    mutant and the file agree up to the one holding the cursor are parsed.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self.tree = ast.parse(text)
        line_starts = [0]
        for line in text.splitlines(keepends=True):
            line_starts.append(line_starts[-1] + len(line))

        def first_line(node: ast.stmt) -> int:
            return min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])

        self.top_starts = sorted(line_starts[first_line(node) - 1] for node in self.tree.body)
        # (start, end, indented) of every definition, the end being the end of its last line
        self.definitions = sorted(
            (line_starts[first_line(node) - 1], line_starts[node.end_lineno], node.col_offset > 0)
            for node in ast.walk(self.tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            and node.end_lineno is not None
        )
        self._region_parses: dict[tuple[int, int], bool] = {}

    def _original_parses(self, start: int, end: int, wrapper: str) -> bool:
        key = (start, end)
        if key not in self._region_parses:
            self._region_parses[key] = parses(wrapper + self.text[start:end])
        return self._region_parses[key]

    def continues(self, mutant: str, cursor: int) -> bool:
        enclosing = [d for d in self.definitions if d[0] < cursor < d[1]]
        for start, end, indented in reversed(enclosing):  # innermost first
            wrapper = "if 1:\n" if indented else ""
            if mutant.startswith(self.text[:start]) and self._original_parses(start, end, wrapper):
                return parses(wrapper + mutant[start:] + self.text[cursor:end])
        following = bisect.bisect_right(self.top_starts, cursor)
        end = self.top_starts[following] if following < len(self.top_starts) else len(self.text)
        for start in reversed([0, *self.top_starts[:following]]):
            if mutant.startswith(self.text[:start]):
                return parses(mutant[start:] + self.text[cursor:end])
        return parses(mutant + self.text[cursor:])


def in_function_body(tree: ast.AST, text: str) -> list[tuple[int, int]]:
    """Character spans [start, end) of the bodies of every function in a parsed file."""
    line_starts = [0]
    for line in text.splitlines(keepends=True):
        line_starts.append(line_starts[-1] + len(line))
    lines = text.splitlines(keepends=True)
    spans = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            start = line_starts[node.body[0].lineno - 1]
            end_line = lines[node.end_lineno - 1]
            # ast columns are UTF-8 byte offsets
            end_col = len(end_line.encode("utf-8")[: node.end_col_offset].decode("utf-8", "replace"))
            spans.append((start, line_starts[node.end_lineno - 1] + end_col + 1))
    return spans


@dataclass
class Sample:
    file: str
    offset: int
    line: int
    in_function: bool
    n_mutants: int
    schemes: set[str] = field(default_factory=set)
    problems: list[str] = field(default_factory=list)
    error: str | None = None
    logged_errors: list[str] = field(default_factory=list)
    seconds: float = 0.0


@pytest.fixture(scope="module")
def samples() -> list[Sample]:
    """generate_mutants at POSITIONS_PER_FILE random cursor positions in each file of FILES."""
    files = []
    for rel in FILES:
        path = STDLIB / rel
        assert path.is_file(), f"{path} is missing from this Python's standard library"
        files.append((rel, path.read_text(encoding="utf-8")))
    return sample_positions(files, POSITIONS_PER_FILE, random.Random(SEED))


@pytest.fixture(scope="module")
def corpus_samples() -> list[Sample]:
    """The same at positions in the behaviour corpus's code: match statements, walrus, async
    generators, positional-only parameters and other syntax the standard library rarely uses."""
    files = []
    for path in sorted(CORPUS.glob("*.py")):
        code = path.read_text(encoding="utf-8").partition(CORPUS_MARKER)[0]
        if not path.name.startswith("_"):
            files.append((path.name, code))
    return sample_positions(files, CORPUS_POSITIONS_PER_FILE, random.Random(SEED))


def sample_positions(files: list[tuple[str, str]], per_file: int, rng: random.Random) -> list[Sample]:
    out: list[Sample] = []
    swallowed = ErrorRecorder()
    logger = logging.getLogger("cctest")
    logger.addHandler(swallowed)
    try:
        _sample_files(files, per_file, rng, out, swallowed)
    finally:
        logger.removeHandler(swallowed)
    return out


class ErrorRecorder(logging.Handler):
    """Keeps the ERROR records that cctest logs (errors it recovered from)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@contextlib.contextmanager
def no_swallowed_errors(label: object) -> Iterator[None]:
    """Fail when cctest logs an error it recovered from (generate_mutants never raises, so a bug
    would otherwise show only as missing mutants)."""
    recorder = ErrorRecorder()
    logger = logging.getLogger("cctest")
    logger.addHandler(recorder)
    try:
        yield
    finally:
        logger.removeHandler(recorder)
    assert not recorder.records, f"{label!r}: cctest logged {[r.getMessage() for r in recorder.records]}" + (
        f" from {recorder.records[0].exc_info[1]!r}" if recorder.records[0].exc_info else ""
    )


def _sample_files(
    files: list[tuple[str, str]],
    per_file: int,
    rng: random.Random,
    out: list[Sample],
    swallowed: ErrorRecorder,
) -> None:
    for rel, text in files:
        real = RealFile(text)
        spans = in_function_body(real.tree, text)
        for offset in sorted(rng.randrange(len(text) + 1) for _ in range(per_file)):
            prompt = text[:offset]
            s = Sample(
                file=rel,
                offset=offset,
                line=prompt.count("\n") + 1,
                in_function=any(a <= offset < b for a, b in spans),
                n_mutants=0,
            )
            t0 = time.perf_counter()
            swallowed.records.clear()
            try:
                outcome = generate_mutants(prompt, k=K)
            except Exception as exc:  # the failure under test: recorded, asserted below
                s.error = f"{type(exc).__name__}: {exc}"
            else:
                s.seconds = time.perf_counter() - t0
                s.n_mutants = len(outcome.mutants)
                if len(outcome.mutants) > K:
                    s.problems.append(f"{len(outcome.mutants)} mutants for k={K}")
                # the structural-distance bound (default 0.1) splits kept from dropped
                s.problems += [
                    f"{m.scheme} kept at distance {m.structural_distance}"
                    for m in outcome.mutants
                    if not 0.0 <= m.structural_distance <= 0.1
                ]
                s.problems += [
                    f"{m.scheme} dropped at distance {m.structural_distance}"
                    for m in outcome.dropped
                    if not m.structural_distance > 0.1
                ]
                window = find_window(prompt)
                for m in outcome.mutants:
                    s.schemes.add(m.scheme)
                    s.problems += [f"{m.scheme}: {p}" for p in mutant_problems(prompt, m, real, window)]
                for m in outcome.dropped:
                    s.problems += [
                        f"dropped {m.scheme}: {p}" for p in mutant_problems(prompt, m, None, window)
                    ]
            # generate_mutants keeps a request alive by logging an internal error and returning no
            # mutants: a swallowed error is a bug all the same
            s.logged_errors = [
                r.getMessage() + (f" ({r.exc_info[1]!r})" if r.exc_info else "") for r in swallowed.records
            ]
            out.append(s)


def where(s: Sample) -> str:
    return f"{s.file}:{s.line} (offset {s.offset})"


def test_no_exception_escapes_at_sampled_positions(samples):
    errors = [f"{where(s)}: {s.error}" for s in samples if s.error]
    assert not errors, "\n".join(errors)


def test_no_internal_error_is_swallowed_at_sampled_positions(samples):
    errors = [f"{where(s)}: {e}" for s in samples for e in s.logged_errors]
    assert not errors, "\n".join(errors)


def test_every_mutant_keeps_its_promises_at_sampled_positions(samples):
    problems = [f"{where(s)}: {p}" for s in samples for p in s.problems]
    assert not problems, f"{len(problems)} problems:\n" + "\n".join(problems[:40])


def test_no_exception_or_broken_mutant_in_the_corpus(corpus_samples):
    failures = [f"{where(s)}: {s.error}" for s in corpus_samples if s.error]
    failures += [f"{where(s)}: logged {e}" for s in corpus_samples for e in s.logged_errors]
    failures += [f"{where(s)}: {p}" for s in corpus_samples for p in s.problems]
    assert not failures, f"{len(failures)} failures:\n" + "\n".join(failures[:40])


def test_mutants_for_95_percent_of_positions_inside_functions(samples):
    inside = [s for s in samples if s.in_function]
    covered = [s for s in inside if s.n_mutants > 0]
    everywhere = sum(s.n_mutants > 0 for s in samples)
    ratio = len(covered) / len(inside)
    times = sorted(s.seconds for s in samples)
    by_scheme = {name: sum(name in s.schemes for s in inside) for name in SCHEMES}
    report = (
        f"mutants at {len(covered)}/{len(inside)} = {ratio:.1%} of positions inside functions; "
        f"{everywhere}/{len(samples)} = {everywhere / len(samples):.1%} of all positions; "
        f"positions per scheme {by_scheme}; "
        f"generate_mutants median {times[len(times) // 2] * 1e3:.1f} ms, max {times[-1] * 1e3:.1f} ms"
    )
    print(report)
    assert len(inside) >= 0.5 * len(samples)  # the sample really is mostly function bodies
    uncovered = [where(s) for s in inside if s.n_mutants == 0]
    assert ratio >= TARGET, report + "\nno mutant at:\n" + "\n".join(uncovered)


def test_every_scheme_applies_at_some_sampled_position(samples):
    # FORM needs an equation written in a comment or docstring near the cursor, which these files
    # almost never have (two, in statistics.py); tests/unit/mutators/test_form.py and the
    # behaviour corpus (formulas.py) are where it must apply
    seen = set().union(*(s.schemes for s in samples))
    expected = set(DEFAULT_SCHEMES) - {"FORM"}
    assert seen >= expected, f"never produced: {sorted(expected - seen)}"


# --------------------------------------------------------------------------------------------------
# hostile and unusual prompts

DEEP = "x = " + "(" * 5000
EDGE_PROMPTS = {
    "empty": "",
    "newline": "\n",
    "spaces": "    ",
    "comments only": "# a comment\n# another\n    # indented comment\n",
    "only a decorator": "@functools.lru_cache(maxsize=None)\n",
    "decorator then def": "@decorator\ndef f(a, b, /):\n    total = a + b\n    ",
    "syntax errors earlier": (
        "def f(:\n    x = = 1\n)))\nclass\ndef g(a, /):\n    y = a + 1\n    if y:\n        "
    ),
    "only syntax errors": "def (\n  ) = lambda:\n\t\t]]]\n",
    "tabs": "def f(a, /):\n\tcount = 0\n\tfor i in range(a):\n\t\tcount += i\n\tif count:\n\t\t",
    "mixed tabs and spaces": "def f(a, /):\n\tx = 1\n        y = 2\n\t",
    "unicode identifiers": "def größe(länge, /):\n    fläche = länge * länge\n    if fläche:\n        ",
    "very long line": "def f(a, /):\n    s = 0\n    s = " + " + ".join(["a"] * 3000) + "\n    ",
    "very long unfinished line": "def f(a, /):\n    s = 0\n    return " + "a + " * 2500,
    "deep brackets": DEEP,
    "deep brackets in a function": "def f(a, /):\n    b = 1\n    " + DEEP,
    "deep indentation": "".join("    " * i + f"if x{i}:\n" for i in range(90)),
    "unterminated string": "def f(a, /):\n    b = a\n    return 'abc",
    "unterminated triple-quoted string": 'def f(a, /):\n    b = a\n    doc = """starts here\n  and goes on\n',
    "unterminated f-string": "def f(a, /):\n    b = a\n    return f'{b + ",
    "crlf": "def f(a, /):\r\n    count = 0\r\n    if a:\r\n        count += 1\r\n    ",
    "lone cr": "def f(a, /):\r    x = 1\r    ",
    "form feed": "def f(a, /):\n\x0c    x = 1\n    ",
    "bom": "\ufeffdef f(a, /):\n    x = 1\n    ",
    "async def": "async def f(a, /):\n    result = await a\n    async for x in a:\n        result += 1\n    ",
    "class body": (
        "class C:\n    limit = 3\n\n    def method(self, n, /):\n        total = n * self.limit\n        "
    ),
    "class level": "class C:\n    limit = 3\n    ",
    "lambda at cursor": "def f(a, /):\n    b = 2\n    key = lambda x: x + ",
    "lambda only": "key = lambda a, b: a if ",
    "cursor in parameters": "def f(a, b",
    "cursor in header": "def f(a, b):",
    "nul bytes": "def f(a, /):\n    x = a\x00\n    ",
    "binary-ish junk": "".join(chr(c) for c in range(1, 0x3000, 7)),
    "surrogate-free astral": "def f(a, /):\n    s = '𝔘𝔫𝔦𝔠𝔬𝔡𝔢' + a\n    ",
    "walrus and match": (
        "def f(cmd, /):\n    if (n := len(cmd)) > 1:\n        match cmd:\n"
        "            case [x, *rest]:\n                "
    ),
    "match statement": (
        "def f(shape, /):\n    match shape:\n        case [x, y]:\n            return x\n"
        "        case _:\n            return 0\n    "
    ),
    "mangled names": "class K:\n    def __m(self, __x, /):\n        __y = __x\n        return __y\n    ",
    "global and nonlocal": (
        "def f(a, /):\n    global G\n    def g():\n        nonlocal a\n        a += 1\n        "
    ),
}
EDGE_PROMPTS["3000-line prompt"] = (
    "".join(
        f"def f{i}(a, b, /):\n    total = a * {i}\n    if total > b:\n        return total\n    return b\n\n"
        for i in range(500)
    )
    + "def last(x, /):\n    y = x + 1\n    "
)

# prompts where a mutant is clearly possible: a function with a positional-only parameter and a local
SHOULD_MUTATE = [
    "decorator then def",
    "syntax errors earlier",
    "tabs",
    "unicode identifiers",
    "crlf",
    "async def",
    "class body",
    "lambda at cursor",
    "3000-line prompt",
]


@pytest.mark.parametrize("label", list(EDGE_PROMPTS))
def test_edge_prompt_never_raises(label):
    prompt = EDGE_PROMPTS[label]
    with no_swallowed_errors(label):
        outcome = generate_mutants(prompt, k=K)
    assert len(outcome.mutants) <= K
    for m in (*outcome.mutants, *outcome.dropped):
        problems = mutant_problems(prompt, m)
        assert not problems, f"{label}: {problems}\n{m.text[-400:]}"


@pytest.mark.parametrize("label", SHOULD_MUTATE)
def test_edge_prompt_with_a_function_gets_mutants(label):
    outcome = generate_mutants(EDGE_PROMPTS[label], k=K)
    assert outcome.mutants, f"no mutant for {label}"


def test_crlf_prompt_keeps_crlf_line_endings():
    """A Windows file's mutants keep its line endings: an inserted line ends in CRLF too."""
    prompt = EDGE_PROMPTS["crlf"]
    outcome = generate_mutants(prompt, k=K)
    assert outcome.mutants
    for m in outcome.mutants:
        assert "\n" not in m.text.replace("\r\n", ""), (m.scheme, m.text)


@pytest.mark.parametrize("scheme", list(SCHEMES))
def test_each_scheme_alone_never_raises_on_edge_prompts(scheme):
    for label, prompt in EDGE_PROMPTS.items():
        with no_swallowed_errors(label):
            outcome = generate_mutants(prompt, schemes=(scheme,), k=3)
        assert all(m.scheme == scheme for m in outcome.mutants), label
        assert len(outcome.mutants) <= 3, label


# (prompt, the names whose renames may reach the unfinished last line): a rename made in a nested
# function must not leak into a tail that is outside it, and a name the tail reads from elsewhere
# must not be renamed after a same-named variable of another scope
TAIL_SCOPES = {
    "nested parameter, tail outside": (
        "b = 10\ndef outer(a, /):\n    def inner(b, /):\n        c = b\n        return c\n    return a + b",
        {"a"},
    ),
    "tail inside the nested function": (
        "def outer(a, /):\n    def inner(b, /):\n        c = b\n        return c + b",
        {"b", "c"},
    ),
    "shadowed in nested function": (
        "def outer(a, /):\n    total = 0\n    def inner(total, /):\n        return total\n"
        "    return inner(total) + total",
        {"a", "total"},
    ),
    "comprehension variable": ("def outer(a, /):\n    x = [y for y in a]\n    return y + x", {"a", "x"}),
    "lambda parameter": ("def f(a, /):\n    lam = lambda a: a * 2\n    return lam(a) + a", {"a", "lam"}),
    "method tail": (
        "class C:\n    def m(self, n, /):\n        k = n\n        return self.k + k + n",
        {"n", "k"},
    ),
}


@pytest.mark.parametrize("label", list(TAIL_SCOPES))
def test_tail_renames_follow_scope(label):
    prompt, allowed = TAIL_SCOPES[label]
    outcome = generate_mutants(prompt, k=20)
    assert outcome.mutants
    for m in (*outcome.mutants, *outcome.dropped):
        assert not mutant_problems(prompt, m), (m.scheme, mutant_problems(prompt, m))
        tail = last_line(m.text)
        leaked = {
            old for new, old in m.renames.items() if occurs_as_identifier(new, tail) and old not in allowed
        }
        assert not leaked, f"{m.scheme} renamed {leaked} in the tail: {tail!r}"
        # attributes keep their names: self.k is not the local k
        assert ".k" not in prompt or "self.k" in tail


# fragments that make random text look like half-typed Python, so fuzzing reaches past the tokenizer
PYTHONISH = st.lists(
    st.sampled_from(
        [
            "def ",
            "f",
            "(",
            ")",
            "a",
            ", ",
            "b",
            "/",
            ":",
            "\n",
            "    ",
            "\t",
            "=",
            " + ",
            "+=",
            "if ",
            "else",
            "return ",
            "lambda ",
            "'",
            '"',
            '"""',
            "#",
            "@",
            "class ",
            "async ",
            "await ",
            "[",
            "]",
            "{",
            "}",
            "nonlocal ",
            "global ",
            "x",
            "ä",
            "\r\n",
            "\\",
            "f'{",
            "1",
            ".",
            "*",
            "**",
            "yield ",
            "not ",
            "==",
        ]
    ),
    max_size=40,
).map("".join)
FUZZ = settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)


@FUZZ
@given(st.text(max_size=300))
def test_random_text_never_raises(prompt):
    with no_swallowed_errors(prompt):
        outcome = generate_mutants(prompt, k=K)
    for m in outcome.mutants:
        assert m.text != prompt


@FUZZ
@given(PYTHONISH, st.integers(0, 2**32 - 1))
def test_pythonish_text_never_raises_and_mutants_keep_promises(prompt, seed):
    with no_swallowed_errors(prompt):
        outcome = generate_mutants(prompt, k=K, seed=seed)
    for m in outcome.mutants:
        problems = mutant_problems(prompt, m)
        assert not problems, (prompt, m.scheme, m.text, problems)
