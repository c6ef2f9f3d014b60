# ruff: noqa
"""Corpus: equation solvers whose docstrings and comments state their equation (FORM rewrites those)."""

import math


def solve_linear(a, b):
    """Return the x that solves a*x + b = 0 (a and b are not 0)."""
    return -b / a


def solve_quadratic(a, b, c):
    """The real solutions of a*x**2 + b*x + c = 0, sorted."""
    d = b * b - 4 * a * c  # the discriminant of a*x**2 + b*x + c = 0
    if d < 0:
        return []
    r = math.sqrt(d)
    return sorted({(-b - r) / (2 * a), (-b + r) / (2 * a)})


def solve_sin(a, b):
    """One solution of a*sin(x) = b, or None."""
    if abs(b / a) > 1:
        return None
    return math.asin(b / a)


def solve_log(a, b):
    # a*log(x) = b with log base 10
    return 10 ** (b / a)


def doc_of_linear():
    return solve_linear.__doc__ is not None


# ==== CHECKS (never mutated) ====
from _checks import Checks
from hypothesis import strategies as st

checks = Checks()


@checks.case
def solutions(m):
    return (
        m.solve_linear(2, -4),
        m.solve_quadratic(1, -3, 2),
        m.solve_quadratic(1, 0, 1),
        m.solve_sin(2, 1),
        m.solve_sin(1, 2),
        m.solve_log(2, 4),
        m.doc_of_linear(),
    )


nonzero = st.integers(-50, 50).filter(bool)


@checks.prop(st.tuples(nonzero, nonzero, nonzero))
def solver_prop(m, abc):
    a, b, c = abc
    return m.solve_linear(a, b), m.solve_quadratic(a, b, c), m.solve_sin(a, b)
