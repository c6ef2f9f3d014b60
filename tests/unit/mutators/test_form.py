"""FORM: equations in comments and docstrings rewritten with M1–M5; the code stays as it was."""

from __future__ import annotations

from cctest.backends.rules import RuleBackend
from cctest.config import Settings
from cctest.engine import Engine
from cctest.mutators import generate_mutants, mutate_whole

PROMPT = '''def solve(a, b):
    """Return the x such that a*x + b = 0."""
    '''


def test_whole_file_applies_m1_to_every_equation():
    source = PROMPT + "# the root of a*sin(x) = b is asin(b/a)\nreturn_value = 1\n"
    got = mutate_whole(source, "FORM").text
    assert got == source.replace("a*x + b = 0", "0 = a*x + b").replace("a*sin(x) = b", "b = a*sin(x)")


def test_mutants_at_a_cursor_are_the_single_mutations():
    out = generate_mutants(PROMPT, schemes=["FORM"], k=20)
    docstrings = [m.text.splitlines()[1].strip() for m in out.mutants]
    assert docstrings == [
        f'"""Return the x such that {eq}."""'
        for eq in (
            "0 = a*x + b",
            "a*x + b + a = 0 + a",
            "a*x + b + b = 0 + b",
            "a*x + b - a = 0 - a",
            "a*x + b - b = 0 - b",
            "(a*x + b)*a = 0*a",
            "(a*x + b)*b = 0*b",
            "(a*x + b)/a = 0/a",
            "(a*x + b)/b = 0/b",
        )
    ]
    assert all(m.scheme == "FORM" and m.structural_distance == 0.0 for m in out.mutants)
    for m in out.mutants:
        compile(m.text + "return -b / a\n", "<mutant>", "exec")


def test_no_equation_no_mutant():
    assert generate_mutants("def add(a, b):\n    # a + b = sum\n    ", schemes=["FORM"]).mutants == []


async def test_consistency_check_flags_a_completion_that_follows_the_wording():
    # a model that answers differently when the two sides are swapped: its answer to the original
    # agrees with the other mutants, the swapped one is the outlier
    backend = RuleBackend(fragile=["0 = a*x + b"])
    result = await Engine(backend, Settings(schemes=("FORM",), mutants=9)).run(PROMPT)
    swapped = [i for i, m in enumerate(result.mutants, start=1) if "0 = a*x + b" in m.text]
    assert swapped and set(result.outliers) == set(swapped) and not result.original_is_outlier


async def test_reduce_formulas_sends_the_reduced_equation():
    prompt = 'def solve(a, b):\n    """Return the x such that (a*x + b)*a = 0*a."""\n    '
    plain, reduced = RuleBackend(), RuleBackend()
    await Engine(plain, Settings(mutants=0)).run(prompt)
    await Engine(reduced, Settings(mutants=0, reduce_formulas=True)).run(prompt)
    assert plain.calls[0] == [prompt]
    assert reduced.calls[0] == [prompt.replace("(a*x + b)*a = 0*a", "a*x + b = 0")]


def test_sympy_loads_only_once_an_equation_is_found():
    # SymPy takes a second to import: the mutators (and so the language server) pay it only for a
    # prompt with an equation in a comment or docstring
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from cctest.mutators import generate_mutants\n"
        "generate_mutants('def add(a, b):\\n    # total = a + b\\n    res = a + b\\n    ', k=10)\n"
        "print('sympy' in sys.modules)\n"
        'generate_mutants(\'def f(a, b):\\n    """Solve a*x + b = 0."""\\n    \', k=10)\n'
        "print('sympy' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "True"]
