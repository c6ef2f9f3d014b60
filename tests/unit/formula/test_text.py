"""Equations in comments and docstrings: found where written, rewritten in place, never in code."""

from __future__ import annotations

from cctest.formula.text import find_equations, reduce_in_code, rewrite_equations

CODE = '''def solve(a, b):
    """Return the x such that a*x + b = 0."""
    # total = a + b is no equation (no x); (a*x**2 + b*x + c = 0) is one
    y = a*x + b  # code is never touched: y = 0 + b = a*x + b + b only in this comment
    s = "0 + b = a*x + b + b"  # a string that is data: eval(s) would break if it were rewritten
    return s
'''


def test_equations_are_found_in_comments_and_docstrings_only():
    found = [(CODE[f.start : f.end], f.equation.text) for f in find_equations(CODE)]
    assert found == [
        ("a*x + b = 0", "a*x + b = 0"),
        ("a*x**2 + b*x + c = 0", "a*x**2 + b*x + c = 0"),
        ("0 + b = a*x + b + b", "0 + b = a*x + b + b"),
    ]


def test_reduce_in_code_rewrites_only_the_equations():
    out = reduce_in_code(CODE)
    assert out == CODE.replace("0 + b = a*x + b + b only", "a*x + b = 0 only")
    assert "y = a*x + b  #" in out  # the code line itself is unchanged


def test_a_docstring_still_being_typed_counts():
    half = 'def solve(a, b):\n    """Solve (a*x + b)*a = 0*a for x.\n    '
    assert reduce_in_code(half) == 'def solve(a, b):\n    """Solve a*x + b = 0 for x.\n    '
    data = 'def solve(a, b):\n    s = """(a*x + b)*a = 0*a\n    '
    assert reduce_in_code(data) == data


def test_text_without_equations_is_returned_as_is():
    # code, comparisons, an equation outside any comment or string, a broken line
    for code in ("", "x = 1\n", "def f(a):\n    return a == 2\n", "# a <= x >= b\n", 'f(:\n  "a*x = b'):
        assert rewrite_equations(code, lambda eq: "CHANGED") == code
